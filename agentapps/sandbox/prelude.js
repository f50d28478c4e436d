// Installed once per isolate, before any agent code: strips host-reaching and unmetered globals,
// guards V8 builtins that can abort the whole process, and defines the frozen ctx bridge.
// Python fills in the JSON config (the upper-case placeholder). The script's value is the object
// the host drives the bridge through; no global names it, so agent code cannot reach it.
'use strict';

// mini-racer's setTimeout shim: `var`s cannot be deleted, the class binding can be cleared.
if (typeof __TimerManager !== 'undefined') { __TimerManager = undefined; }

(function (config) {
  const G = globalThis;
  const { apply, defineProperty, deleteProperty, getOwnPropertyDescriptor } = Reflect;
  const { create, freeze, getOwnPropertyNames, hasOwn } = Object;
  const stringify = JSON.stringify, parse = JSON.parse;
  const PromiseCtor = Promise, promiseThen = Promise.prototype.then;
  const AsyncFunction = (async function () {}).constructor;
  const ErrorCtor = Error, RangeErrorCtor = RangeError, TypeErrorCtor = TypeError;
  const SyntaxErrorProto = SyntaxError.prototype, getPrototypeOf = Object.getPrototypeOf;
  const StringCtor = String, strSlice = String.prototype.slice, regexExec = RegExp.prototype.exec;
  const isArray = Array.isArray;
  const MAX_LEN = config.maxLength, MAX_OUT = config.maxOutput, MAX_MSG = 2000;
  const MAX_VALUE = config.maxValue, BATCH = 2 * config.maxArgBytes;

  // 1. No host APIs, and nothing whose memory the heap cap does not meter: ArrayBuffer backing
  // stores, and the native (ICU, Rust) objects behind Intl and Temporal (measured: 1.4 GB of RSS
  // under a 32 MiB cap). Proxy goes too: it could lie about `length` to the guards below.
  const banned = ['ArrayBuffer', 'SharedArrayBuffer', 'DataView', 'Atomics', 'WebAssembly',
    'Intl', 'Temporal', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval',
    'setImmediate', 'clearImmediate', '__timer_manager', 'FinalizationRegistry', 'Proxy',
    'console'];
  for (const name of getOwnPropertyNames(G)) {
    if (/Array$/.test(name) && name !== 'Array') banned.push(name);  // every typed array
  }
  for (const name of banned) {
    if (!deleteProperty(G, name) &&
        !defineProperty(G, name, { value: undefined, writable: false })) {
      throw new ErrorCtor('sandbox prelude: cannot remove ' + name);
    }
  }

  // 2. Array and string builtins that loop in C++ over a huge length never see V8's termination
  // and can abort the process ("invalid table size"); refuse such lengths up front.
  const tooLong = what => new RangeErrorCtor(what + ' too long for this operation in the sandbox');
  const badLength = (why) => new TypeErrorCtor('sandbox: ' + why);
  function checkLength(o) {
    if (typeof o === 'string') {
      if (o.length > MAX_LEN) throw tooLong('string');
      return;
    }
    if (o === null || (typeof o !== 'object' && typeof o !== 'function')) return;
    if (isArray(o)) {  // a real array (Proxy is gone): its length is a plain own number
      if (o.length > MAX_LEN) throw tooLong('array');
      return;
    }
    const d = getOwnPropertyDescriptor(o, 'length');
    if (d === undefined) {
      if ('length' in o) throw badLength('array-likes need an own length');
      return;
    }
    if (hasOwn(d, 'get') || hasOwn(d, 'set')) throw badLength('length must not be a getter');
    const n = d.value;
    if (n !== undefined && typeof n !== 'number') throw badLength('length must be a number');
    if (n > MAX_LEN) throw tooLong('array');
  }
  const method = (owner, key, value) =>
    defineProperty(owner, key, { value, writable: true, enumerable: false, configurable: true });
  function guard(owner, key, mode) {  // mode: which values the builtin walks: 'this'/'first'/'all'
    const original = owner[key];
    if (typeof original !== 'function') return;
    method(owner, key, {
      [key](...args) {
        if (mode !== 'first') checkLength(this);
        if (mode === 'all') for (let i = 0; i < args.length; i++) checkLength(args[i]);
        if (mode === 'first' && args.length) checkLength(args[0]);
        return apply(original, this, args);
      },
    }[key]);
  }
  for (const key of getOwnPropertyNames(Array.prototype)) {
    if (key !== 'constructor' && key !== 'length') {
      guard(Array.prototype, key, key === 'concat' ? 'all' : 'this');
    }
  }
  guard(Array, 'from', 'first');
  for (const key of ['split', 'match', 'matchAll', 'replace', 'replaceAll', 'search']) {
    guard(String.prototype, key, 'this');
  }
  for (const sym of [Symbol.match, Symbol.matchAll, Symbol.replace, Symbol.search, Symbol.split]) {
    guard(RegExp.prototype, sym, 'first');
  }

  // Locale methods given locales/options build a fresh ICU object per call, freed only by a
  // full GC (measured: 2.6 GB of RSS in 20 s under a 32 MiB cap); the defaults are cached.
  function defaultLocale(owner, key, kept) {
    const original = owner[key];
    method(owner, key, {
      [key](...args) { return apply(original, this, kept ? [args[0]] : []); },
    }[key]);
  }
  for (const key of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString']) {
    defaultLocale(Date.prototype, key, false);
  }
  defaultLocale(Number.prototype, 'toLocaleString', false);
  defaultLocale(BigInt.prototype, 'toLocaleString', false);
  defaultLocale(String.prototype, 'toLocaleUpperCase', false);
  defaultLocale(String.prototype, 'toLocaleLowerCase', false);
  defaultLocale(String.prototype, 'localeCompare', true);

  // 3. Per-snippet state, console capture and the invoke bridge.
  let S = null;
  function fresh() {
    const s = create(null);
    s.queue = create(null); s.first = 0; s.next = 0;  // null prototype: no setters to hijack
    s.pending = create(null); s.open = 0; s.nextId = 0; s.calls = 0;
    s.limit = null;
    s.outcome = null; s.finished = false; s.finish = 'null';
    s.head = ''; s.tail = ''; s.total = 0;
    return s;
  }
  const slice = (s, a, b) => apply(strSlice, s, b === undefined ? [a] : [a, b]);
  function show(v) {
    if (typeof v === 'string') return v;
    try {
      const j = stringify(v);
      if (typeof j === 'string') return j;
    } catch (e) { /* not JSON: fall through */ }
    try { return StringCtor(v); } catch (e) { return '[unprintable]'; }
  }
  function write(...args) {
    let line = '';
    for (let i = 0; i < args.length; i++) line += (i ? ' ' : '') + show(args[i]);
    line += '\n';
    S.total += line.length;
    if (S.head.length < MAX_OUT) {
      const room = MAX_OUT - S.head.length;
      S.head += slice(line, 0, room);
      if (line.length > room) S.tail += slice(line, room);
    } else {
      S.tail += line;
    }
    if (S.tail.length > 2 * MAX_OUT) S.tail = slice(S.tail, -MAX_OUT);
  }
  const noop = function () {};
  const consoleObj = create(null);
  for (const k of ['log', 'info', 'warn', 'error', 'debug']) {
    consoleObj[k] = freeze(write.bind(null));
  }
  for (const k of ['trace', 'dir', 'table', 'group', 'groupEnd', 'time', 'timeEnd', 'count']) {
    consoleObj[k] = noop;
  }
  freeze(noop);
  const fixed = (value) =>
    ({ value: freeze(value), writable: false, enumerable: false, configurable: false });
  if (!defineProperty(G, 'console', fixed(consoleObj))) {
    throw new ErrorCtor('sandbox prelude: cannot install console');
  }

  class InvokeError extends ErrorCtor {
    constructor(message) {
      super(message);
      defineProperty(this, 'name', { value: 'InvokeError', writable: true, configurable: true });
    }
  }
  freeze(InvokeError.prototype); freeze(InvokeError);
  const lineRe = /, <anonymous>:(\d+):\d+\)/;
  function describe(e) {
    let text;
    try {
      const isObject = e !== null && (typeof e === 'object' || typeof e === 'function');
      const message = isObject ? e.message : undefined;
      if (typeof message === 'string') {
        const name = e.name;
        text = (typeof name === 'string' && name ? name + ': ' : '') + message;
        const stack = e.stack;
        const m = typeof stack === 'string' ? apply(regexExec, lineRe, [stack]) : null;
        if (m) text += ' (line ' + (+m[1] - 2) + ')';
      } else {
        text = 'Uncaught ' + show(e);
      }
    } catch (x) {
      text = 'Uncaught exception that cannot be described';
    }
    return text.length > MAX_MSG ? slice(text, 0, MAX_MSG) + '...' : text;
  }
  function failed(e, type) {
    if (e !== null && typeof e === 'object' && getPrototypeOf(e) === InvokeError.prototype) {
      type = 'invoke';
    }
    return '{"ok":false,"type":' + stringify(type) + ',"message":' + stringify(describe(e)) + '}';
  }

  function invoke(name, args) {
    const s = S;
    return new PromiseCtor(function (resolve, reject) {
      if (typeof name !== 'string') {
        return reject(new InvokeError('ctx.manager.invoke(name, args): name must be a string'));
      }
      let json;
      try { json = stringify(args === undefined ? null : args); } catch (e) {
        return reject(new InvokeError('ctx.manager.invoke: args are not JSON (' +
          describe(e) + ')'));
      }
      if (typeof json !== 'string') {
        return reject(new InvokeError('ctx.manager.invoke: args must be a JSON value, not ' +
          typeof args));
      }
      s.calls++;
      let over = null;
      if (s.calls > config.maxInvokes) {
        over = 'more than ' + config.maxInvokes + ' ctx.manager.invoke calls in one snippet';
      } else if (json.length > config.maxArgBytes) {
        over = 'ctx.manager.invoke args are over the ' + config.maxArgBytes + '-byte limit';
      }
      if (over !== null) {
        if (s.limit === null) s.limit = over;
        return reject(new InvokeError(over));
      }
      const id = ++s.nextId;
      const p = create(null); p.resolve = resolve; p.reject = reject;
      s.pending[id] = p; s.open++;
      s.queue[s.next++] =
        '{"id":' + id + ',"name":' + stringify(name) + ',"args":' + stringify(json) + '}';
    });
  }
  function finish(value) {
    const json = stringify(value === undefined ? null : value);
    if (typeof json === 'string' && json.length > MAX_VALUE) {
      if (S.limit === null) {
        S.limit = 'the ctx.manager.finish value is over ' + MAX_VALUE + ' characters of JSON';
      }
      return;
    }
    S.finished = true;
    S.finish = typeof json === 'string' ? json : 'null';
  }
  const manager = create(null);
  manager.invoke = freeze(invoke); manager.finish = freeze(finish);
  const ctxObj = create(null);
  ctxObj.manager = freeze(manager);
  defineProperty(G, 'ctx', fixed(ctxObj));
  // Middleware mode (the agent serves a middleware skill): `target.manager.next()` runs the rest
  // of the served pipeline once, through the same bridge under a name no skill can have.
  if (config.middleware === true) {
    const targetManager = create(null);
    targetManager.next = freeze(function next() { return invoke('$next', null); });
    const targetObj = create(null);
    targetObj.manager = freeze(targetManager);
    defineProperty(G, 'target', fixed(targetObj));
  }
  G.memory = parse(config.memory);

  // 4. What Python reaches through the object this script returns: setting `start` (the
  // snippet's code) or `deliver` (invoke results) and reading `poll` or `final` run these
  // functions, and V8 drains microtasks before the host's next access. Only JSON text crosses.
  function start(code) {
    const s = S = fresh();
    let fn;
    try { fn = new AsyncFunction(code); } catch (e) {
      s.outcome = failed(e, getPrototypeOf(e) === SyntaxErrorProto ? 'syntax' : 'runtime');
      return;
    }
    apply(promiseThen, apply(fn, undefined, []), [function (v) {
      let json;
      try { json = stringify(v); } catch (e) {
        s.outcome = '{"ok":false,"type":"runtime","message":' +
          stringify('the snippet returned a value that is not JSON (' + describe(e) + ')') + '}';
        return;
      }
      if (typeof json === 'string' && json.length > MAX_VALUE) {
        s.outcome = '{"ok":false,"type":"limit","message":' + stringify('the return value is ' +
          'over ' + MAX_VALUE + ' characters of JSON') + '}';
        return;
      }
      s.outcome = '{"ok":true,"value":' + stringify(typeof json === 'string' ? json : 'null') + '}';
    }, function (e) { s.outcome = failed(e, 'runtime'); }]);
  }
  // A poll hands over queued requests up to BATCH characters (at least one), so that no reply
  // to the host grows with the number of calls; "more" says some are still queued.
  // Once the snippet has settled, asked for nothing new and awaits no invoke, the poll also
  // carries final(): that saves Python one more eval (and one more trip to the isolate).
  // Everything else is read first, so agent code that final() runs (a memory getter or toJSON)
  // cannot change this poll's requests, outcome or limit; the final state is the same text a
  // separate final() call would have returned at that moment.
  function poll() {
    const s = S, start = s.first;
    let requests = '';
    while (s.first < s.next && (s.first === start || requests.length < BATCH)) {
      requests += (s.first === start ? '' : ',') + s.queue[s.first];
      delete s.queue[s.first++];
    }
    const taken = s.first - start;
    let text = '{"requests":[' + requests + '],"more":' + (s.first < s.next) +
      ',"outcome":' + (s.outcome === null ? 'null' : s.outcome) +
      ',"limit":' + (s.limit === null ? 'null' : stringify(s.limit));
    if (s.outcome !== null && taken === 0 && s.open === 0) text += ',"final":' + final();
    return text + '}';
  }
  function deliver(text) {
    const replies = parse(text);
    for (let i = 0; i < replies.length; i++) {
      const r = replies[i], p = S.pending[r.id];
      if (p === undefined) continue;
      delete S.pending[r.id]; S.open--;
      if (r.ok) p.resolve(r.value); else p.reject(new InvokeError(r.message));
    }
  }
  // memory: its JSON text; null when it is not JSON (a cycle, a BigInt: Python keeps the last
  // snapshot); false when it is over MAX_VALUE characters (Python restores the last snapshot).
  function final() {
    let memory;
    try {
      memory = G.memory === undefined ? '{}' : stringify(G.memory);
    } catch (e) { memory = null; }
    const shown = typeof memory !== 'string' ? 'null'
      : memory.length > MAX_VALUE ? 'false' : stringify(memory);
    return '{"head":' + stringify(S.head) + ',"tail":' + stringify(S.tail) +
      ',"total":' + S.total +
      ',"finished":' + S.finished + ',"finish":' + stringify(S.finish) +
      ',"memory":' + shown + '}';
  }
  const bridge = create(null);
  defineProperty(bridge, 'start', { set: start });
  defineProperty(bridge, 'deliver', { set: deliver });
  defineProperty(bridge, 'poll', { get: poll });
  defineProperty(bridge, 'final', { get: final });
  // the run's `memory` seed, set once before its first snippet (the prelude itself is the same
  // for every run of the same limits, so a warm spare started before the run can serve it)
  defineProperty(bridge, 'memory', { set: function (text) { G.memory = parse(text); } });
  return freeze(bridge);
})(__AGENTAPPS_CONFIG__);
