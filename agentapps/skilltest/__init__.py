"""Running a skill's test cases (`skill-test`, `agentapps test`): collect the tests files, run each
case through the real pipeline with its recorded model turns, judge it, report (text, JSON, JUnit).
The tests file format lives in `agentapps.tools.testfile`; docs/toolchain.md documents both."""
