"""timing: a middleware that reports how long a skill's execution took, on stderr.

A skill switches it on with a metadata key named like this skill: `timing: true` reports every run;
`timing: {over: 2.5}` reports only runs that took at least 2.5 seconds. Its own `after`/`before`
place it once the args are validated and around execution (the skill's code, or its agent), so
the time is the skill's own, whether it succeeds or fails. stdout, which carries the result, is
left alone.
"""

import sys
import time

frontmatter = {
    "name": "timing",
    "description": "Middleware: report how long a skill took on stderr (`timing: true`, or `timing: {over: SECONDS}`).",
    "metadata": {
        "role": "middleware",
        "tags": ["middleware"],
        "after": ["$pre-execute", "validate-args"],
        "before": ["$execute"],
    },
}


async def run(ctx, args):
    target = ctx.target  # the skill being served; `ctx` is this middleware's own call
    setting = target.meta.get("timing")
    over = setting.get("over", 0) if isinstance(setting, dict) else 0
    started = time.perf_counter()
    status = "interrupted"
    try:
        await ctx.manager.next()
        status = "ok"
    except Exception:
        status = "failed"
        raise
    finally:
        elapsed = time.perf_counter() - started
        target.locals.elapsed = elapsed
        if elapsed >= over:
            sys.stderr.write(f"timing: {target.tool.name} {status} in {elapsed * 1000:.0f} ms\n")
            sys.stderr.flush()
