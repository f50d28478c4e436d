"""The agent: the policy layer behind the `agent` skill and the loops behind the bundled providers.

    config      model config: defaults, CLI/env overrides, limits, what sub-agents inherit
    scope       which contexts the agent serves and which policies bind agent code
    discovery   which skills the model is told about (constrained vs discovery mode)
    prompt      the system prompt (a Jinja2 template shipped with the skill) and the user message
    trace       hook events: `locals.agent.trace`, `agent-*` events, the CLI reporter
    state       the run's state and the hook policy (turns, steps, loop guard, returns, budgets)
    models      facts about Bedrock, OpenAI and Anthropic models: context window, prices, prompt caching
    usage       the four token counters, their sums and their cost (`model.pricing`)
    spend       spending per run, enclosing runs and process; budgets; the next-turn estimate
    context_view    the model's view of a conversation and its estimated size in tokens
    context_edit    `model.contextEdit`: clearing old tool results, compaction into a summary
    code        the `invoke` tool: agent code in the V8 sandbox, results shaped for the model
    script      the scripted-provider file format, its per-process cursor and the recorder
    runner      one agent run end to end: sandbox, callback refs, provider call, result
    checkpoint  `agentapps run`'s checkpoints after each turn and the ticket a run is resumed by
    resume      the runner's side of them: seed a resumed agent, save a completed turn
    scripted    the `agent-scripted` provider loop (no network)
    converse    the streaming provider loop and `agent-bedrock` (Converse streaming via agentapps.providers)
    openai_provider     `agent-openai`: that loop over Chat Completions (OpenAI and compatible servers)
    anthropic_provider  `agent-anthropic`: that loop over the Anthropic Messages API
    bedrock_config  the streaming providers' settings: fallback, attempts, inference
"""
