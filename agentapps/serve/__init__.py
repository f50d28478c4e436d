"""`agentapps serve`: skills behind an HTTP API (Starlette and uvicorn, imported only here).

    command     options, bootstrap, the listening socket, uvicorn started and stopped
    app         the route table, JSON errors, the lifespan (coordinator, schedules)
    guard       bearer tokens, Origin and Host checks, CORS
    http        JSON bodies within the size limit, refusals, statuses by exit code
    calls       admitting a call: offered skill, args, thread, concurrency
    runs        one run held by this process: events, approvals, cancellation, the outcome
    routes      /invocations, /chat (SSE), /approve, /cancel, /skills, /healthz
    threads     /threads: the sessions of skills keyed by an arg
    hooks       /hooks/{skill}: signed webhooks
    schedule    metadata.schedule runs, once across replicas (cron.py parses them)
    coord       what replicas share, in-process (`Local`); redis_coord.py shares it through Redis
    events      trace entries as stream events (the one name mapping)
    openapi     /openapi.json;  page: the chat page at /
"""
