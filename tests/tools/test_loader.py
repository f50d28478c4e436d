"""Loading skill files: formats, names, and a table of load errors that name the file and line."""

from __future__ import annotations

import time

import pytest

from agentapps.errors import SkillLoadError
from agentapps.tools.loader import load_file


def test_markdown_skill_frontmatter_and_body(project):
    path = project.write("summarize.skill.md", """
        ---
        name: summarize
        description: Summarize a file.
        allowed-tools: [file-read, file-list]
        metadata:
          params: {type: object, properties: {path: {type: string}}}
        ---
        Read :arg[path].
        """)
    tool = load_file(path)
    assert (tool.name, tool.kind, tool.description) == ("summarize", "markdown", "Summarize a file.")
    assert tool.allowed_tools == "file-read file-list"
    assert tool.body.strip() == "Read :arg[path]."
    assert tool.body_line == 8


def test_file_without_frontmatter_takes_its_name_from_the_file(project):
    tool = load_file(project.write("bare-prompt.skill.md", "Just a prompt.\n"))
    assert tool.name == "bare-prompt"
    assert tool.body == "Just a prompt.\n"


def test_folder_skill_keeps_unknown_keys_and_defaults_to_context_role(project):
    tool = load_file(project.write("pdf-tools/SKILL.md", """
        ---
        name: pdf-tools
        description: Work with PDFs.
        license: Apache-2.0
        ---
        Body.
        """))
    assert tool.name == "pdf-tools"
    assert tool.frontmatter["license"] == "Apache-2.0"
    assert tool.metadata["role"] == "context"


def test_folder_skill_without_name_uses_the_folder_name(project):
    assert load_file(project.write("my-skill/SKILL.md", "Body only.\n")).name == "my-skill"


def test_python_frontmatter_is_read_without_running_the_module(project):
    marker = project.root / "ran"
    path = project.write("code.skill.py", f"""
        open({str(marker)!r}, "w").write("x")
        frontmatter = {{"name": "code", "description": "d"}}

        def run(ctx, args):
            return 1
        """)
    tool = load_file(path)
    assert tool.name == "code" and tool.kind == "code"
    assert not marker.exists()


def test_a_code_skill_starting_with_a_utf8_bom_loads_and_runs(project):
    source = '\ufefffrontmatter = {"name": "bom"}\n\n\ndef run(ctx, args):\n    return "ran"\n'
    (project.root / "bom.skill.py").write_text(source, encoding="utf-8")
    result = project.cli("run", "bom")
    assert (result.returncode, result.stdout) == (0, "ran\n"), result.stderr
    assert project.cli("check", "bom.skill.py").returncode == 0


def test_a_syntax_error_after_a_utf8_bom_names_its_line(project):
    (project.root / "bom.skill.py").write_text('\ufeffx = 1\ndef run(ctx, args)\n    pass\n', encoding="utf-8")
    result = project.cli("run", "bom")
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {project.root / 'bom.skill.py'}:2: Python syntax error")


def test_shebang_line_is_skipped(project):
    tool = load_file(project.write("x.skill.md", "#!/usr/bin/env -S agentapps run\n---\nname: shebang\n---\nHi\n"))
    assert tool.name == "shebang"
    assert tool.body == "Hi\n"


LOAD_ERRORS = [
    ("bad-yaml.skill.md", "---\nname: x\ndescription: a: b\n---\n", 3, "Invalid YAML"),
    ("alias.skill.md", "---\nname: x\nmetadata:\n  a: &x [1, 2]\n  b: *x\n---\n", 5, "aliases"),
    ("dup.skill.md", "---\nname: x\nname: y\n---\n", 3, "Duplicate key 'name'"),
    ("badname.skill.md", "---\nname: Bad_Name\n---\n", 2, "Invalid skill name"),
    ("long.skill.md", "---\nname: " + "a" * 65 + "\n---\n", 2, "Invalid skill name"),
    ("unclosed.skill.md", "---\nname: x\n", 1, "never ends"),
    ("list.skill.md", "---\n- a\n- b\n---\n", 2, "must be a YAML mapping"),
    ("python-tag.skill.md", "---\nname: !!python/object:os.system x\n---\n", 2, "Invalid YAML"),
    ("params.skill.md", "---\nname: x\nmetadata:\n  params: [1]\n---\n", 2, "metadata.params"),
    ("tools.skill.md", "---\nname: x\nallowed-tools: 3\n---\n", 2, "allowed-tools"),
    ("syntax.skill.py", "frontmatter = {'name': 'x'}\ndef run(ctx, args)\n    pass\n", 2, "syntax error"),
    ("norun.skill.py", "frontmatter = {'name': 'x'}\n", 1, "run(ctx, args)"),
    ("notliteral.skill.py", "frontmatter = dict(name='x')\ndef run(ctx, args):\n    pass\n", 1, "literal dict"),
    ("badutf8.skill.md", None, None, "not valid UTF-8"),
]


@pytest.mark.parametrize(("filename", "text", "line", "message"), LOAD_ERRORS, ids=[r[0] for r in LOAD_ERRORS])
def test_load_errors_name_file_and_line(project, filename, text, line, message):
    path = project.root / filename
    if text is None:
        path.write_bytes(b"---\nname: x\n---\n\xff\xfe\n")
    else:
        path.write_text(text)
    with pytest.raises(SkillLoadError) as info:
        load_file(path)
    assert message in str(info.value)
    assert info.value.file == str(path)
    assert info.value.line == line
    assert info.value.exit_code == 2


def test_frontmatter_bombs_are_refused_quickly(project):
    bomb = "---\nname: x\nmetadata:\n  a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"  {chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n" for i in range(8)
    ) + "---\n"
    huge = "---\nname: x\ndescription: " + "y" * (70 * 1024) + "\n---\n"
    deep = "---\nname: x\nmetadata:\n  a: " + "[" * 200 + "]" * 200 + "\n---\n"
    for i, text in enumerate((bomb, huge, deep)):
        path = project.write(f"bomb{i}.skill.md", text)
        started = time.perf_counter()
        with pytest.raises(SkillLoadError):
            load_file(path)
        assert time.perf_counter() - started < 0.1
