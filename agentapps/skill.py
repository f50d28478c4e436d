"""Public: helpers any skill's code may use. Stable within a major version (see `agentapps`).

    from agentapps.skill import path_get, MISSING, project_relative

    path_get(obj, expr, default)    follow a dotted path (`a.b.0`) through mappings, lists, attributes
    MISSING                         a default for `path_get` that no value equals: "leads nowhere"
    as_text(value)                  text as is, None as "", anything else as compact JSON
    caller_skill(ctx)               the context of the skill that called this one (None at the top)
    project_relative(root, path)    the project-relative POSIX path a user path names (DeniedError outside)
    resolve_in_project(root, path)  the real absolute path of a user path inside the project (DeniedError outside)
    checked_view(ctx)               the args as the permission checks of this call saw them
    params_of(tool, lookup)         a skill's effective `params` schema ({} when it takes none)
    returns_of(tool, lookup)        a skill's effective `returns` schema
    ref_kind(ref)                   "name", "path" or "uri": how a ref is resolved
    refuse_options(args, who)       ArgsError when args from outside carry invoke options (`$context`)
    refuse_secret_name(internals, what, name)   refuse a file or key name holding a declared secret
    list_tools(lookup, ...)         the skills on the search path, as `skill-list` shows them
    describe(tool, meta, ...)       one skill's description, as `skill-describe` shows it
    blocking(fn, *args)             call a blocking function (a terminal prompt) without stalling a loop
    hub_operation(ctx, op, args)    a hub operation (add-source, install, add, remove, update, list, search)
    run_skill_tests(g, targets, ...)  run skills' test cases (`skill-test`), the report as data
    compile_skills(ctx, refs)       compile markdown skills into code skills (`skill-compile`)

Names are imported on first use: importing this module imports nothing else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentapps.core.exports import lazy_exports

if TYPE_CHECKING:
    from agentapps.cascade.interface import params_of, returns_of
    from agentapps.context.admission import refuse_options
    from agentapps.context.caller import caller_skill
    from agentapps.core.confine import project_relative, resolve_in_project
    from agentapps.core.driver import blocking
    from agentapps.core.paths import MISSING, path_get
    from agentapps.directives.template import as_text
    from agentapps.hub.calls import hub_operation
    from agentapps.secrets import refuse_secret_name
    from agentapps.skilltest.api import run_skill_tests
    from agentapps.skilltest.compile import compile_skills
    from agentapps.tools.catalog import describe, list_tools
    from agentapps.tools.names import ref_kind
    from agentapps.tools.views import checked_view

_EXPORTS = {
    "MISSING": "agentapps.core.paths",
    "path_get": "agentapps.core.paths",
    "as_text": "agentapps.directives.template",
    "caller_skill": "agentapps.context.caller",
    "project_relative": "agentapps.core.confine",
    "resolve_in_project": "agentapps.core.confine",
    "checked_view": "agentapps.tools.views",
    "params_of": "agentapps.cascade.interface",
    "returns_of": "agentapps.cascade.interface",
    "ref_kind": "agentapps.tools.names",
    "refuse_options": "agentapps.context.admission",
    "refuse_secret_name": "agentapps.secrets",
    "list_tools": "agentapps.tools.catalog",
    "describe": "agentapps.tools.catalog",
    "blocking": "agentapps.core.driver",
    "hub_operation": "agentapps.hub.calls",
    "run_skill_tests": "agentapps.skilltest.api",
    "compile_skills": "agentapps.skilltest.compile",
}

__all__ = ["MISSING", "as_text", "blocking", "caller_skill", "checked_view", "compile_skills", "describe", "hub_operation", "list_tools",
           "params_of",
           "path_get", "project_relative", "ref_kind", "refuse_options", "refuse_secret_name",
           "resolve_in_project", "returns_of", "run_skill_tests"]

__getattr__ = lazy_exports(__name__, _EXPORTS)
