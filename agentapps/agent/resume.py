"""The runner's side of checkpoints (agentapps.agent.checkpoint): seed a resumed agent with what
its earlier tries did, and save what it has done after each completed turn.

A resumed agent starts at the turn after the checkpoint's, with its turns, steps, tokens and cost
counted again at every budget level (`maxTurns`, `maxSteps`, `maxTokens`, `maxCost`, `--max-cost`,
and the run log's `model.budget`, which the run's own record already holds), its sandbox `memory`
as it was and, under `--record`, the turns recorded so far ahead of the new ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentapps.agent import usage as u
from agentapps.agent.checkpoint import Resumable, Ticket
from agentapps.agent.slots import AGENT_RESUMABLE
from agentapps.agent.spend import process_spend
from agentapps.runlog.slots import AGENT_TOTALS

if TYPE_CHECKING:
    from agentapps.agent.state import AgentRun
    from agentapps.context.context import Globals
    from agentapps.sandbox import Sandbox


def memory_seed(ticket: Ticket | None, memory: dict[str, Any]) -> dict[str, Any]:
    """The sandbox `memory` a resumed agent starts with: the checkpoint's."""
    if ticket is None or ticket.resume is None or not isinstance(ticket.resume.get("memory"), dict):
        return memory
    return dict(ticket.resume["memory"])


def attach(g: Globals, ticket: Ticket, run: AgentRun, sandbox: Sandbox, hook_ref: str) -> None:
    """Seed `run` from the ticket's checkpoint (if it resumes one) and give its provider loop the
    link it saves checkpoints through (`resumable_for`); `detach` ends it."""
    seed = ticket.resume
    if seed is not None:
        _seed(g, run, seed)
        ticket.earlier = {"turns": run.spend.turns if run.spend else run.turn,
                          "steps": run.spend.steps if run.spend else run.steps,
                          "models": process_spend(g).totals()["models"]}

    def on_save(turn: int, messages: list[dict[str, Any]], provider: dict[str, Any]) -> None:
        _save(g, ticket, run, sandbox, turn, messages, provider)

    g.internals.get(AGENT_RESUMABLE)[hook_ref] = Resumable(
        None if seed is None else {"turn": seed.get("turn"), "messages": seed.get("messages"),
                                   "provider": seed.get("provider") or {}}, on_save)


def detach(g: Globals, hook_ref: str) -> None:
    g.internals.get(AGENT_RESUMABLE).pop(hook_ref, None)


def _seed(g: Globals, run: AgentRun, seed: dict[str, Any]) -> None:
    counts = seed.get("counts") or {}
    run.turn, run.steps = int(counts.get("turn") or 0), int(counts.get("steps") or 0)
    run.usage = u.normalize(counts.get("usage"))
    run.turns_usage = [u.normalize(t) for t in counts.get("turnsUsage") or []]
    run.turns_output = sum(t["outputTokens"] for t in run.turns_usage)
    spent = seed.get("spend") or {}
    turns, steps = int(spent.get("turns") or 0), int(spent.get("steps") or 0)
    if run.spend is not None:
        run.spend.seed(spent.get("models") or {}, turns, steps)
    top = process_spend(g)
    top.recorded_cost = top.cost or 0.0  # the run's record holds the earlier tries' spending
    # the process totals (the run's record, --json) add each agent's own turns when it ends:
    # the earlier tries' sub-agent turns and steps are counted here
    g.internals.set(AGENT_TOTALS, {"turns": max(0, turns - run.turn), "steps": max(0, steps - run.steps),
                                   "stop_reason": None})
    recorded = seed.get("recording")
    if run.recorder is not None and isinstance(recorded, list) and not run.recorder.turns:
        run.recorder.turns = [t for t in recorded if isinstance(t, dict)]


def _save(g: Globals, ticket: Ticket, run: AgentRun, sandbox: Sandbox, turn: int,
          messages: list[dict[str, Any]], provider: dict[str, Any]) -> None:
    spend, top = run.spend, process_spend(g)
    state: dict[str, Any] = {
        "turn": turn, "messages": messages, "provider": provider, "memory": sandbox.memory,
        "counts": {"turn": run.turn, "steps": run.steps, "usage": dict(run.usage),
                   "turnsUsage": list(run.turns_usage)},
        "spend": {"turns": spend.turns if spend else run.turn, "steps": spend.steps if spend else run.steps,
                  "models": {m: s.to_dict() for m, s in (spend.models if spend else {}).items()}}}
    if run.recorder is not None:
        state["recording"] = [t for t in run.recorder.turns if t is not None]
    totals = {**top.totals(), "turns": state["spend"]["turns"], "steps": state["spend"]["steps"]}
    if ticket.save(g, state, totals):
        top.recorded_cost = top.cost or 0.0
    if run.recorder is not None:  # what was recorded so far is on disk, whatever ends the run
        run.recorder.info = {**run.recorder.info, "skill": run.skill, "model": run.config.get("id"),
                             "provider": run.config.get("agent")}
        run.recorder.write()
