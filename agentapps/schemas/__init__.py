"""JSON Schema for skills' params and returns.

- `validation`: the entry point. `check_limits` (size and depth of args, at every door) and
  `validate` (a value against a schema), which uses `plain` when it can and jsonschema otherwise.
- `plain`: the subset of keywords most skills use, checked without importing jsonschema, with
  jsonschema's verdicts and readable messages.
- `plain_check`: a plain schema compiled once into a yes/no function, used before `plain` builds
  any messages.
"""
