"""What agent runs have spent, and whether the next turn may start: budgets and the context window.

Spending is kept per model (tokens and dollars) at three levels: each agent run, every agent run
that encloses it (a sub-agent's turns count for its starter too), and the whole process (what
`--max-cost` caps and `--json` reports). Turns and invoke steps are counted the same way, so
`maxTurns` and `maxSteps`, like `maxTokens` and `maxCost`, bound an agent and every sub-agent it
starts together: a sub-agent spends its starter's budget. Before a turn the agent asks `admit()` with an estimate
of that turn; if any level's budget would be passed, the run stops with exit 4 and says what was
spent. The estimate of the next turn (`next_turn`):

- input: the provider's estimate of the request it is about to send (`contextTokens` in the
  `turn-start` event), else the previous turn's whole input plus its output;
- of which cached: the previous turn's cache reads and writes (that prefix is read back);
- output: the mean output of the run's earlier turns (none before the first turn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentapps.agent import usage as u
from agentapps.agent.models import Price
from agentapps.agent.slots import AGENT_SPEND
from agentapps.errors import LimitError

if TYPE_CHECKING:
    from agentapps.context.context import Globals


@dataclass
class ModelSpend:
    """One model's tokens and cost so far in a run."""

    usage: dict[str, int] = field(default_factory=u.empty)
    cost: float | None = 0.0  # None once a report came for a model with no known price

    def to_dict(self) -> dict[str, Any]:
        return {**self.usage, "cost": None if self.cost is None else round(self.cost, 8)}


@dataclass
class Spend:
    """Tokens and dollars of one agent run and its sub-agents (or of the whole process)."""

    owner: str | None  # the skill of the agent run; None for the whole process
    parent: Spend | None = None
    max_tokens: float = math.inf
    max_cost: float = math.inf
    max_turns: float = math.inf
    max_steps: float = math.inf
    models: dict[str, ModelSpend] = field(default_factory=dict)
    turns: int = 0  # model turns of this run and its sub-agents
    recorded_cost: float = 0.0  # of the process level: what the run log already holds (a REPL's earlier turns)
    steps: int = 0  # invoke calls of this run and its sub-agents

    def chain(self) -> list[Spend]:
        out: list[Spend] = []
        node: Spend | None = self
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def add(self, model: str, report: dict[str, int], price: Price | None) -> None:
        for level in self.chain():
            spent = level.models.setdefault(model, ModelSpend())
            u.add(spent.usage, report)
            if spent.cost is not None:
                spent.cost = None if price is None else spent.cost + u.cost(report, price)

    def unrecorded(self) -> float:
        """Dollars spent at the process level (this run) that the run log does not hold yet."""
        top = self.chain()[-1]
        return max(0.0, (top.cost or 0.0) - top.recorded_cost)

    def over_turns(self) -> Spend | None:
        """The first level (this run, then its starters) whose `maxTurns` one more turn would pass."""
        return next((level for level in self.chain() if level.turns + 1 > level.max_turns), None)

    def over_steps(self) -> Spend | None:
        """The first level whose `maxSteps` one more invoke call would pass."""
        return next((level for level in self.chain() if level.steps + 1 > level.max_steps), None)

    def seed(self, models: dict[str, Any], turns: int, steps: int) -> None:
        """Count, at every level, what the earlier tries of a resumed run spent (`models`: per model,
        tokens and `cost`, as `totals()` gives them), so its budgets include them."""
        for level in self.chain():
            level.turns += turns
            level.steps += steps
            for model, spent in models.items():
                if not isinstance(spent, dict):
                    continue
                mine = level.models.setdefault(str(model), ModelSpend())
                u.add(mine.usage, u.normalize({k: v for k, v in spent.items() if k != "cost"}))
                cost = spent.get("cost")
                mine.cost = None if mine.cost is None or not isinstance(cost, (int, float)) \
                    else mine.cost + float(cost)

    def take_turn(self) -> None:
        for level in self.chain():
            level.turns += 1

    def take_step(self) -> None:
        for level in self.chain():
            level.steps += 1

    @property
    def usage(self) -> dict[str, int]:
        total = u.empty()
        for spent in self.models.values():
            u.add(total, spent.usage)
        return total

    @property
    def cost(self) -> float | None:
        """Dollars spent; None when any model used has no known price."""
        costs = [m.cost for m in self.models.values() if u.tokens(m.usage)]
        return None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 8)

    @property
    def tokens(self) -> int:
        return u.tokens(self.usage)

    def totals(self) -> dict[str, Any]:
        """Usage, cost and per-model spending, as `AGENT_TOTALS` and `--json` give them."""
        return {"usage": self.usage, "cost": self.cost,
                "models": {m: s.to_dict() for m, s in self.models.items()}}

    def admit(self, turn: dict[str, int], price: Price | None, *, skill: str, number: int) -> None:
        """Raise LimitError when the next turn (estimated usage `turn`) would pass a budget."""
        more_tokens = u.tokens(turn)
        more_cost = u.cost(turn, price) if price is not None else 0.0
        for level in self.chain():
            spent_cost = level.cost or 0.0
            if level.tokens + more_tokens > level.max_tokens:
                raise _over(level, skill, number, f"about {more_tokens:,} more tokens",
                            f"model.maxTokens of '{level.owner}' is {level.max_tokens:,.0f}")
            if spent_cost + more_cost > level.max_cost:
                budget = f"model.maxCost of '{level.owner}'" if level.owner else "--max-cost"
                raise _over(level, skill, number, f"about ${more_cost:.4f} more",
                            f"{budget} is ${level.max_cost:g}")


def _over(level: Spend, skill: str, number: int, more: str, budget: str) -> LimitError:
    cost = level.cost
    spent = f"{level.tokens:,} tokens" + ("" if cost is None else f" (${cost:.4f})")
    return LimitError(f"The agent for '{skill}' stopped before turn {number}: {budget}, {spent} "
                      f"spent so far, and the next turn would take {more}. Raise the budget or "
                      "narrow the task (model.maxTokens counts every token of the run; the cap "
                      "on one reply is model.maxOutputTokens).", skill=skill)


def next_turn(history: list[dict[str, int]], context_tokens: Any, output_total: int | None = None) -> dict[str, int]:
    """Estimated usage of the coming turn from the run's earlier turns (see the module doc).
    `output_total`, the output tokens of all of `history` when the caller keeps that sum, spares
    adding them up again every turn (which made a turn's cost grow with the run)."""
    last = history[-1] if history else u.empty()
    if isinstance(context_tokens, int) and not isinstance(context_tokens, bool) and context_tokens >= 0:
        whole = context_tokens
    else:
        whole = u.input_tokens(last) + last["outputTokens"]
    cached = min(last["cacheReadInputTokens"] + last["cacheWriteInputTokens"], whole)
    if output_total is None:
        output_total = sum(t["outputTokens"] for t in history)
    output = round(output_total / len(history)) if history else 0
    return {"inputTokens": whole - cached, "outputTokens": output,
            "cacheReadInputTokens": cached, "cacheWriteInputTokens": 0}


def process_spend(g: Globals) -> Spend:
    """The process-wide level, capped by `--max-cost` (made on first use)."""
    found = g.internals.get(AGENT_SPEND)
    if not isinstance(found, Spend):
        cap = g.config.overrides.get("maxCost")
        found = Spend(None, max_cost=float(cap) if isinstance(cap, (int, float)) else math.inf)
        g.internals.set(AGENT_SPEND, found)
    return found
