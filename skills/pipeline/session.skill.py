"""session: load a skill's session history before it runs and append what it did afterwards.

Settings come from the served skill's cascaded `metadata.session`: the shorthand `args.sessionId`
or `{key, capture, maxEntries, store}` (capture `$all` by default; 50 entries; store `memory`, which
lives as long as the process — use `store: file` for the CLI, it persists in .agent-apps/sessions/).
A key that resolves to nothing skips the session quietly. History goes to `ctx.locals.session`
(a list of entries) and, for markdown skills, is prepended to the prompt after a short preamble —
unless the prompt placed it with `:session-history[]`; that directive runs earlier (directives
come before this middleware) and reads the same store through `history_for`. A failed or
interrupted call is saved too, marked `status: error|interrupted`. Values of the variables the
skill (or any skill run so far) declares in `metadata.env` are scrubbed from every entry. A dry
run loads but never saves. When saving fails after the skill finished, the error carries its result.
"""

from agentapps import AgentAppsError, RunInterruptedError, StoreWriteError
from agentapps.runtime import (
    capture,
    note_session,
    open_store,
    render_history,
    session_key,
    settings_of,
)

frontmatter = {
    "name": "session",
    "description": "Middleware: give a skill conversational memory keyed by `metadata.session` (e.g. args.sessionId).",
    "metadata": {"role": "middleware", "tags": ["pipeline"]},
}


async def run(ctx, args):
    target = ctx.target
    found = settings_of(target)
    key = session_key(target, found) if found is not None else None
    if found is None or key is None:
        return  # no session for this call: the chain continues
    note_session(ctx.globals.internals, key)  # the run log's session id: the first one
    store = open_store(ctx.globals, found.store)
    history = store.load(key)
    target.locals.session = history
    prompt = target.locals.get("prompt")
    if history and prompt is not None and "session-history" not in (prompt.get("directives") or ()):
        prompt.expanded = f"{render_history(history)}\n---\n\n{prompt.expanded}"
    if ctx.globals.internals.dry_run:
        await ctx.manager.next()
        return
    try:
        await ctx.manager.next()
    except BaseException as exc:
        interrupted = isinstance(exc, RunInterruptedError) or not isinstance(exc, Exception)
        message = str(exc) if isinstance(exc, AgentAppsError) else f"{type(exc).__name__}: {exc}"
        entry = capture(target, found, "interrupted" if interrupted else "error",
                        "Interrupted." if interrupted else message)
        try:
            store.append(key, entry, found.max_entries)
        except AgentAppsError as store_error:  # keep the original failure; mention this one
            exc.add_note(f"The session could not be saved either: {store_error}")
        raise
    try:
        store.append(key, capture(target, found, "ok", None), found.max_entries)
    except StoreWriteError as exc:
        if target.envelope.depth == 1:  # the command's own skill: the CLI still prints its result
            exc.result = (target.locals.result,)
        raise
    return
