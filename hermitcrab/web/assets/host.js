// host.js: the page side of the Hermitcrab web shell (notes/web-protocol.md).
// The kernel runs in the Go server; this page only gates the API key, offers
// the import of this browser's old blocks, shows boot progress, renders the
// shell the LLM compiled, hands the shell its props (each a call to the
// server), and runs the browser tools the server relays to it.
// Plain ES2020, no build step: the server embeds this file as it is.
'use strict';
(function () {
  const CONVERSATION = 'shell';         // the saved conversation props.conversation uses
  const ERROR_SHOWN_MS = 10000;         // how long an error stays over a running shell
  const MAX_LINES = 200;                // boot lines kept in the page
  const RECOMPILE_WAIT_MS = 15000;      // how long recompile() waits for the new shell's render
  const FS_READ_MAX = 512 * 1024;       // the server takes result bodies up to 1 MiB

  const hc = window.hermitcrab = { state: null, props: null, renderShell, lastRender: null };
  const statusEl = document.getElementById('hc-status');
  const lines = document.getElementById('hc-lines');
  const panels = el('div', { id: 'hc-panels' });
  statusEl.prepend(panels);
  lines.textContent = '';
  // progressEl is one line that says what a callLLM under way is doing:
  // thinking, the tool it runs, its answer arriving. It is empty between calls.
  const progressEl = el('div', { id: 'hc-progress', class: 'hc-line' });
  panels.after(progressEl);
  const calls = new Map(); // stream id of a callLLM under way → { onText, text }

  let csrf = '';
  let booting = false;
  let root = null;       // the one React root, on #root
  let shown = null;      // the shell on screen: {id, Component, live}
  const results = new Map();  // shell id → its render result, for recompile()
  const waiting = new Map();  // shell id → the recompile() waiting for it
  const rebuildBtn = el('button', { id: 'hc-rebuild', type: 'button', title: 'Boot again: the LLM builds a new shell (one deep-tier call)',
    onclick: () => boot('rebuild: booting again') }, 'rebuild');
  const keyBtn = el('button', { id: 'hc-key-button', type: 'button', title: 'Replace or remove the API key',
    onclick: () => keyPanel(hc.state.key_from === 'stored' ? 'Replace the API key, or remove it from the server.'
      : hc.state.key_from === 'environment' ? 'The server uses the key in ANTHROPIC_API_KEY; a key saved here replaces it.' : '') }, 'key');
  const toolsBtn = el('button', { id: 'hc-tools-reset', type: 'button',
    title: 'Put the boot tools back in place of the set the LLM chose with set_tools (when that set makes every call fail)',
    onclick: resetTools }, 'reset tools');
  const controls = el('div', { id: 'hc-controls' }, keyBtn, toolsBtn, rebuildBtn);
  // Over a shell, the status area is a strip of its own above it (the
  // page moves down by its height, so it never covers the shell's face),
  // and the person can dismiss it.
  const dismissBtn = el('button', { id: 'hc-dismiss', type: 'button', title: 'Dismiss these messages', 'aria-label': 'Dismiss',
    onclick: () => { lines.textContent = ''; stripChanged(); } }, '×');
  statusEl.append(dismissBtn);
  if (!window.React || !window.ReactDOM || !window.ReactDOM.createRoot) {
    line('React did not load from /assets/react.js: build it with make build, then reload', 'error');
    return; // before ErrorBoundary below, which extends React.Component
  }

  // ---- small helpers

  // el makes an element: attributes (on* become listeners), then children.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    e.append(...children);
    return e;
  }

  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const describe = e => (e && e.name && e.name !== 'Error' ? e.name + ': ' : '') + (e && e.message ? e.message : String(e));

  // stripChanged keeps the page's top padding equal to the status strip's
  // height while a shell is on screen, and hides the strip when it is empty.
  function stripChanged() {
    const empty = !lines.childElementCount && !panels.childElementCount && !progressEl.textContent;
    document.body.classList.toggle('hc-strip-empty', empty);
    document.body.style.paddingTop = shown && !empty ? statusEl.offsetHeight + 'px' : '';
  }
  new MutationObserver(stripChanged).observe(statusEl, { childList: true, subtree: true });
  window.addEventListener('resize', stripChanged);

  // line adds a boot-screen status line. Over a running shell only errors
  // and answers to the person's own clicks (asked) show, in the strip, and
  // only for a while: the shell is the person's screen now.
  function line(text, level, asked) {
    level = level === 'success' || level === 'error' ? level : 'info';
    const quiet = shown && !booting;
    if (quiet && level !== 'error' && !asked) { console.info('hermitcrab:', text); return; }
    const time = new Date().toTimeString().slice(0, 8);
    const row = el('div', { class: 'hc-line hc-' + level }, el('span', { class: 'hc-time' }, time), ' ' + text);
    if (asked) row.dataset.asked = '1';
    lines.append(row);
    while (lines.childElementCount > MAX_LINES) lines.firstChild.remove();
    if (quiet) quietLines();
  }

  // quietLines clears the boot lines once a shell is showing; errors fade later.
  function quietLines() {
    for (const row of [...lines.children]) {
      if (!row.classList.contains('hc-error') && !row.dataset.asked) row.remove();
      else if (!row.dataset.fading) { row.dataset.fading = '1'; setTimeout(() => row.remove(), ERROR_SHOWN_MS); }
    }
  }

  function setBooting(on) {
    booting = on;
    rebuildBtn.disabled = on;
    document.body.classList.toggle('hc-booting', on);
    if (!on && shown) quietLines();
  }

  // api is the one way to the server: JSON in and out, the CSRF token on
  // every POST, and the server's own error text thrown on failure. A 403 on
  // a POST is retried once with a fresh token: a restarted server has a new one.
  async function api(method, path, body, retried) {
    const opts = { method, headers: {}, credentials: 'same-origin' };
    if (method !== 'GET') {
      opts.headers['Content-Type'] = 'application/json';
      opts.headers['X-CSRF-Token'] = csrf;
      opts.body = JSON.stringify(body === undefined ? {} : body);
    }
    const res = await fetch(path, opts);
    const text = await res.text();
    let data = null;
    try { data = JSON.parse(text); } catch (e) { /* reported below */ }
    if (!res.ok) {
      if (res.status === 403 && method !== 'GET' && !retried) {
        await loadState();
        return api(method, path, body, true);
      }
      // /api/claude passes Anthropic's errors through: {"error": {"message": …}}.
      const err = data && data.error;
      if (res.status === 401 && data && (data.auth || (err && err.type === 'authentication_error'))) {
        keyPanel('The API key was refused (' + (typeof err === 'string' ? err : err && err.message || 'HTTP 401') + '). Enter another key.');
      }
      const msg = typeof err === 'string' ? err : err && err.message ? err.message : `${method} ${path}: HTTP ${res.status} ${text.slice(0, 200)}`;
      throw Object.assign(new Error(msg), { status: res.status, body: data });
    }
    if (data === null) throw new Error(`${method} ${path}: the server's answer is not JSON: ${text.slice(0, 200)}`);
    return data;
  }

  async function loadState() {
    hc.state = await api('GET', '/api/state');
    csrf = hc.state.csrf;
  }

  // ---- the event stream: boot progress, new shells, browser tool calls

  let eventsOpened;
  const eventsReady = new Promise(r => { eventsOpened = r; });

  function openEvents() {
    const es = new EventSource('/api/events');
    let lost = false;
    es.onopen = () => {
      eventsOpened();
      if (lost) { lost = false; line('event stream back', 'success'); }
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) line('the server refused the event stream: reload the page', 'error');
      else if (!lost) { lost = true; line('lost the event stream to the server; reconnecting…', 'error'); }
    };
    es.onmessage = m => {
      let ev;
      try { ev = JSON.parse(m.data); } catch (e) { line('unreadable event from the server: ' + m.data.slice(0, 200), 'error'); return; }
      switch (ev.type) {
        case 'status': line(String(ev.text), ev.level); break;
        case 'shell': setBooting(false); renderShell(ev); break;
        case 'boot_error': bootFailed(ev.error, ev.auth); break;
        case 'browser': runBrowserTool(ev); break;
        case 'wake': awayPanel([ev.wake]); break;
        case 'progress': if (calls.has(ev.call)) progressEl.textContent = String(ev.text); break;
        case 'delta': callDelta(ev); break;
        default: console.warn('hermitcrab: unknown event', ev);
      }
    };
  }

  // callDelta gathers a piece of a callLLM's answer: the strip counts what
  // arrived, and the call's onText, when it gave one, gets the text so far.
  function callDelta(ev) {
    const c = calls.get(ev.call);
    if (!c) return;
    if (ev.reset) c.text = '';
    if (typeof ev.text === 'string') c.text += ev.text;
    if (!c.text) return;
    progressEl.textContent = `receiving the answer: ${c.text.length} characters`;
    if (c.onText) {
      try { c.onText(c.text); } catch (e) { console.warn('hermitcrab: onText threw', e); }
    }
  }

  // callLLM is props.callLLM: the reply's text once it is whole; with
  // opts.onText, also the text so far each time a piece arrives.
  async function callLLM(messages, opts) {
    const stream = Math.random().toString(36).slice(2) + Date.now().toString(36);
    calls.set(stream, { onText: opts && typeof opts.onText === 'function' ? opts.onText : null, text: '' });
    progressEl.textContent = 'asking the LLM…';
    try {
      return (await api('POST', '/api/call', {
        messages: typeof messages === 'string' ? [{ role: 'user', content: messages }] : messages,
        tier: (opts && opts.tier) || 2,
        stream,
      })).text;
    } finally {
      calls.delete(stream);
      if (!calls.size) progressEl.textContent = '';
    }
  }

  // resetTools puts the boot tools back, as `hermitcrab tools reset` does.
  async function resetTools() {
    toolsBtn.disabled = true;
    try {
      const r = await api('DELETE', '/api/tools');
      line(r.reset ? 'the boot tools are back: ' + r.tools.join(', ') : 'the boot tools were already active', 'success', true);
    } catch (e) {
      line('resetting the tools: ' + describe(e), 'error');
    } finally {
      toolsBtn.disabled = false;
    }
  }

  // ---- key gate, import offer, boot

  // code and link are inline pieces of the key form's help.
  const code = text => el('code', {}, text);
  const link = (href, text) => el('a', { href, target: '_blank', rel: 'noopener noreferrer' }, text);

  // keyHelp says where a key comes from, what a boot costs with it (the
  // server's estimate from the price table) and the other ways to run.
  function keyHelp(st) {
    const help = [el('p', {}, 'Hermitcrab needs an Anthropic API key. Create one at ',
      link('https://console.anthropic.com/settings/keys', 'console.anthropic.com'),
      ' (Settings → API keys → Create key). API use is billed to that account, apart from any Claude subscription; you can set a spending limit there.')];
    const c = st.boot_cost;
    if (c) {
      help.push(el('p', { id: 'hc-boot-cost' }, `A boot (the instance wakes and builds its face) is about ${c.calls} calls to ${st.model}, ` +
        `each reading its ${c.prompt_tokens.toLocaleString('en')}-token prompt, and writes a shell of a few thousand tokens: about $${c.usd.toFixed(2)} ` +
        `at $${c.input_per_mtok} in / $${c.output_per_mtok} out per million tokens. A message after that is one smaller call.`));
    }
    help.push(el('p', { id: 'hc-key-other' }, 'Other providers: stop this server and start it with ', code('--provider openai'),
      ' (OPENAI_API_KEY, or any OpenAI-compatible server), or a local model with Ollama: ',
      code('hermitcrab serve --provider openai --base-url http://localhost:11434/v1 --model llama3.2'),
      '. To look around first, free and offline: ', code('hermitcrab serve --demo'), '.'));
    help.push(el('p', {}, 'The server keeps the key in its data folder, readable by you only; this page never stores it.'));
    return help;
  }

  // noKeyPanel is what stays when the key form is closed with no key: the
  // way back to it, never a blank page.
  function noKeyPanel() {
    if (document.getElementById('hc-no-key')) return;
    const panel = el('div', { class: 'hc-panel', id: 'hc-no-key' },
      el('p', {}, 'No API key yet: the instance cannot wake without one, and nothing is sent anywhere until you give one.'),
      el('div', { class: 'hc-row' }, el('button', { id: 'hc-key-open', type: 'button', onclick: () => { panel.remove(); keyPanel(''); } }, 'Enter a key')));
    panels.append(panel);
  }

  // keyPanel shows the key form (once: a second call only updates its
  // message) and resolves once the server has a key. The key goes to the
  // server once and is kept nowhere in this page. "Remove key", shown only
  // when the server holds a stored key, deletes it; "Close" with no key
  // leaves a way back to the form.
  let keyForm = null;
  const keyWaiters = [];
  function keyPanel(message) {
    const done = new Promise(r => keyWaiters.push(r));
    if (keyForm) { keyForm.msg.textContent = message || ''; return done; }
    const st = hc.state || {};
    const input = el('input', { id: 'hc-key', type: 'password', autocomplete: 'off', placeholder: 'sk-ant-…', 'aria-label': 'Anthropic API key' });
    const submit = el('button', { id: 'hc-key-submit', type: 'submit' }, 'Save key');
    const msg = el('div', { class: 'hc-msg', id: 'hc-key-msg' }, message || '');
    const close = () => { form.remove(); keyForm = null; };
    const buttons = [input, submit];
    if (st.key_from === 'stored') {
      const remove = el('button', { id: 'hc-key-remove', type: 'button', onclick: async () => {
        try {
          const r = await api('DELETE', '/api/key');
          msg.textContent = r.note;
          await loadState();
          if (!hc.state.has_key) remove.remove();
        } catch (err) { msg.textContent = err.message; }
      } }, 'Remove key');
      buttons.push(remove);
    }
    buttons.push(el('button', { id: 'hc-key-close', type: 'button', onclick: () => {
      close();
      if (!hc.state.has_key) noKeyPanel();
    } }, 'Close'));
    const form = el('form', { class: 'hc-panel', onsubmit: async e => {
      e.preventDefault();
      if (!input.value.trim()) { msg.textContent = 'Paste an Anthropic API key first.'; return; }
      submit.disabled = true;
      try {
        await api('POST', '/api/key', { key: input.value.trim() });
        input.value = '';
        close();
        line('API key saved on the server', 'success');
        await loadState();
        keyWaiters.splice(0).forEach(r => r());
      } catch (err) {
        msg.textContent = err.message;
        submit.disabled = false;
      }
    } }, ...(st.has_key ? [] : keyHelp(st)), el('div', { class: 'hc-row' }, ...buttons), msg);
    keyForm = { msg };
    panels.append(form);
    input.focus();
    return done;
  }

  // browserKeys are this browser's blocks from the in-browser kernels:
  // hc:NAME (G1) and hcmem:PATH (G0). The prefix filter also keeps the old
  // hermitcrab_api_key out of any import.
  const browserKeys = () => Object.keys(localStorage).filter(k => k.startsWith('hc:') || k.startsWith('hcmem:'));

  // importOffer resolves once the person has imported or chosen to start fresh.
  function importOffer() {
    const keys = browserKeys();
    return new Promise(resolve => {
      const msg = el('div', { class: 'hc-msg' });
      const importBtn = el('button', { id: 'hc-import', type: 'button', onclick: async () => {
        importBtn.disabled = true;
        try {
          const entries = {};
          for (const k of browserKeys()) entries[k] = localStorage.getItem(k);
          const r = await api('POST', '/api/import', { entries });
          line(`imported ${(r.written || []).length} block(s): ${(r.written || []).join(', ')}`, 'success');
          for (const n of r.notes || []) line(n);
          panel.remove();
          resolve();
        } catch (err) {
          msg.textContent = 'Import failed: ' + err.message;
          importBtn.disabled = false;
        }
      } }, 'Import from this browser');
      const freshBtn = el('button', { id: 'hc-fresh', type: 'button', onclick: () => {
        line('starting fresh with the default blocks');
        panel.remove();
        resolve();
      } }, 'Start fresh');
      const panel = el('div', { class: 'hc-panel' },
        el('p', {}, `This browser holds ${keys.length} key(s) from an earlier Hermitcrab (${keys.slice(0, 4).join(', ')}${keys.length > 4 ? ', …' : ''}) ` +
          'and this server has no blocks yet. Import them, or start fresh? The keys stay in this browser either way.'),
        el('div', { class: 'hc-row' }, importBtn, freshBtn), msg);
      panels.append(panel);
    });
  }

  // boot asks the server for a boot; progress, then a shell or boot_error
  // event, arrive on the event stream, so the stream must be open first.
  async function boot(why) {
    if (booting) return;
    setBooting(true);
    line(`${why} (a deep-tier call to ${hc.state.model})`);
    await Promise.race([eventsReady, sleep(3000)]);
    try {
      await api('POST', '/api/boot');
    } catch (e) {
      bootFailed('the boot did not start: ' + e.message);
    }
  }

  function bootFailed(error, auth) {
    setBooting(false);
    if (auth) {
      // A refused key: ask for another, then boot with it.
      line(`boot failed: ${error}`, 'error');
      keyPanel(`The API key was refused (${error}). Enter another key to boot.`).then(() => boot('new key: booting'));
      return;
    }
    line(`boot failed: ${error}. Use rebuild to try again.`, 'error');
    // After ?boot=1 the last good shell was not shown yet: better than nothing.
    if (!shown && hc.state.shell) renderShell(hc.state.shell);
  }

  // ---- rendering a shell

  // ErrorBoundary holds one shell. A shell that fails its first render
  // renders nothing (renderShell then puts the previous shell back); one that
  // fails later shows its error and a way to try again.
  class ErrorBoundary extends React.Component {
    constructor(props) { super(props); this.state = { error: null }; }
    static getDerivedStateFromError(error) { return { error }; }
    componentDidCatch(error, info) { this.props.onError(error, info); }
    render() {
      const error = this.state.error;
      if (!error) return this.props.children;
      if (!this.props.live()) return null;
      return React.createElement('div', { style: { padding: '96px 24px 24px', color: '#ff7a7a', fontFamily: 'monospace', whiteSpace: 'pre-wrap' } },
        'This shell stopped with an error: ' + describe(error) + '\n\n',
        React.createElement('button', { onClick: () => this.setState({ error: null }) }, 'Try again'));
    }
  }

  // shellRequire is the shell's require: esbuild turns each import into one.
  // The page has React and ReactDOM; any other module is an empty object
  // (the compiler warned the LLM about it).
  const shellRequire = name => name === 'react' ? React : name === 'react-dom' || name === 'react-dom/client' ? ReactDOM : {};

  // evaluate runs the compiled shell (CommonJS as esbuild writes it, see
  // package web/jsx) and returns its component: the default export,
  // module.exports itself, or what a top-level return gave. props is in
  // scope for a component written without a props parameter.
  function evaluate(code) {
    const module = { exports: {} };
    const returned = new Function('React', 'ReactDOM', 'module', 'exports', 'require', 'props', code)(
      React, ReactDOM, module, module.exports, shellRequire, hc.props);
    const ex = module.exports;
    const isComponent = c => typeof c === 'function' || !!(c && typeof c === 'object' && c.$$typeof);
    const C = [ex && ex.default, ex, returned].find(isComponent);
    if (!C) throw new Error(`the shell's code has no default export that is a React component (got ${typeof (ex && ex.default)})`);
    return C;
  }

  const element = s => React.createElement(ErrorBoundary, { key: s.id, onError: s.onError, live: () => s.live },
    React.createElement(s.Component, hc.props));

  // renderShell shows {id, code}. The new shell first renders NEXT TO the
  // shell on screen, inside flushSync so its errors are known before this
  // returns and before the browser paints. On success the old one goes; on
  // failure the old one stays mounted with its state, and the server is told.
  function renderShell(shell) {
    if (shown && shown.id === shell.id && hc.lastRender && hc.lastRender.id === shell.id) return hc.lastRender;
    const s = { id: shell.id, Component: null, live: false, error: null };
    s.onError = (err, info) => {
      if (!s.live) { s.error = s.error || err || new Error('render failed'); s.where = componentStack(info); return; }
      line(`shell ${s.id} failed while running: ${describe(err)}`, 'error');
      report(s.id, 'failed', describe(err) + componentStack(info));
    };
    try {
      s.Component = evaluate(shell.code);
      root = root || ReactDOM.createRoot(document.getElementById('root'));
      ReactDOM.flushSync(() => root.render(shown ? [element(shown), element(s)] : element(s)));
    } catch (e) {
      s.error = s.error || e;
    }
    let result;
    if (s.error) {
      try {
        // Put back the previous shell alone (or nothing, for a first shell).
        ReactDOM.flushSync(() => root && root.render(shown ? element(shown) : null));
      } catch (e) { console.error('hermitcrab: the previous shell failed to come back', e); }
      line(`shell ${s.id} did not render: ${describe(s.error)}` + (shown ? ` (shell ${shown.id} stays)` : ''), 'error');
      result = { id: s.id, status: 'failed', error: describe(s.error) + (s.where || '') };
    } else {
      s.live = true;
      shown = s;
      ReactDOM.flushSync(() => root.render(element(s)));
      document.body.classList.add('hc-shell');
      stripChanged();
      quietLines();
      result = { id: s.id, status: 'rendered', error: '' };
    }
    hc.lastRender = result;
    results.set(s.id, result);
    if (waiting.has(s.id)) { waiting.get(s.id)(result); waiting.delete(s.id); }
    report(s.id, result.status, result.error);
    return result;
  }

  // componentStack gives the LLM where in its shell a render failed: the
  // first frames, with the page's own frames and eval noise left out.
  function componentStack(info) {
    const frames = String((info && info.componentStack) || '').split('\n')
      .map(f => f.trim().replace(/\(eval at [^)]*\), <anonymous>(:\d+:\d+)\)/, '(shell code$1)'))
      .filter(f => f && !f.includes('/assets/')).slice(0, 3);
    return frames.length ? '\n' + frames.join('\n') : '';
  }

  function report(id, status, error) {
    api('POST', '/api/shell/status', status === 'failed' ? { id, status, error } : { id, status })
      .catch(e => line(`could not report shell ${id} ${status}: ${e.message}`, 'error'));
  }

  // recompile compiles on the server; the new shell arrives as a shell event
  // (maybe before this answer), so wait for its render to know the outcome.
  async function recompile(jsx) {
    const r = await api('POST', '/api/recompile', { jsx });
    if (!r.ok) return { success: false, error: r.error };
    const done = results.get(r.id) || await new Promise(resolve => {
      waiting.set(r.id, resolve);
      setTimeout(() => { waiting.delete(r.id); resolve({ status: 'pending' }); }, RECOMPILE_WAIT_MS);
    });
    return done.status === 'failed' ? { success: false, error: done.error, id: r.id } : { success: true, id: r.id };
  }

  // ---- props (architecture §10.2): each calls the server, except browser.
  // Block calls answer the server's JSON as is; one-field answers are unwrapped.

  function makeProps(st) {
    const get = path => api('GET', path);
    const post = (path, body) => api('POST', path, body);
    const enc = encodeURIComponent;
    const query = o => {
      const q = new URLSearchParams();
      for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
      return q.toString() ? '?' + q : '';
    };
    return {
      callLLM,
      callAPI: params => post('/api/claude', params),
      callWithToolLoop: async params => (await post('/api/toolloop', params)).response,
      model: st.model,
      fastModel: st.fast_model,
      React,
      ReactDOM,
      getSource: async () => (await get('/api/source')).source,
      recompile,
      setTools: tools => post('/api/tools', { tools: tools || [] }),
      browser: {
        clipboard: { write: text => tools.clipboard_write({ text }), read: () => tools.clipboard_read({}) },
        speak: text => tools.speak({ text }),
        notify: (title, body) => tools.notify({ title, body }),
        openTab: url => tools.open_tab({ url }),
        download: (filename, content) => tools.download({ filename, content }),
      },
      conversation: {
        save: messages => post('/api/conversation/' + CONVERSATION, { messages }),
        load: async () => (await get('/api/conversation/' + CONVERSATION)).messages || [],
      },
      blockRead: (name, path) => get('/api/blocks/' + enc(name) + query({ path })),
      blockWrite: (name, path, content) => post('/api/blocks/' + enc(name), { path, content }),
      blockList: async () => (await get('/api/blocks')).blocks,
      blockCreate: (name, pscale0, place) => post('/api/blocks', { name, pscale0, place }),
      bsp: (name, spindle, point, mode) => get('/api/bsp/' + enc(name) + query({ spindle, point, mode })),
      resolve: (name, depth) => get('/api/resolve/' + enc(name) + query({ depth })),
      wakes: async () => (await get('/api/wakes')).wakes,
      version: st.version,
      localStorage: window.localStorage,
    };
  }

  // ---- browser tools: what the server relays to this page. Each returns a
  // short text; a throw becomes an is_error result with the reason.

  const need = (thing, what) => { if (!thing) throw new Error(`not supported: this browser has no ${what}`); };
  let folder = null; // the FileSystemDirectoryHandle the person picked

  // fsPath splits a path relative to the picked folder.
  function fsPath(path) {
    const parts = String(path || '').split('/').filter(p => p && p !== '.');
    if (parts.includes('..')) throw new Error(`path "${path}" uses "..": paths stay inside the picked folder`);
    return parts;
  }
  async function fsDir(parts, create) {
    if (!folder) throw new Error('no folder picked: call fs_pick_directory first');
    let d = folder;
    for (const p of parts) d = await d.getDirectoryHandle(p, { create });
    return d;
  }
  // fsParent returns the folder holding a path's last part, and that part.
  async function fsParent(path, create) {
    const parts = fsPath(path);
    if (!parts.length) throw new Error(`path "${path}" names the picked folder itself, not an entry in it`);
    return [await fsDir(parts.slice(0, -1), create), parts[parts.length - 1]];
  }

  const tools = {
    async clipboard_write({ text }) {
      need(navigator.clipboard, 'clipboard access (it needs a secure context such as localhost)');
      await navigator.clipboard.writeText(String(text ?? ''));
      return `copied ${String(text ?? '').length} characters to the clipboard`;
    },
    async clipboard_read() {
      need(navigator.clipboard, 'clipboard access (it needs a secure context such as localhost)');
      return await navigator.clipboard.readText();
    },
    async speak({ text }) {
      need(window.speechSynthesis, 'speech synthesis');
      speechSynthesis.speak(new SpeechSynthesisUtterance(String(text ?? '')));
      return `speaking ${String(text ?? '').length} characters`;
    },
    async notify({ title, body }) {
      need(window.Notification, 'notifications');
      if (Notification.permission === 'default') await Notification.requestPermission();
      if (Notification.permission !== 'granted') throw new Error('permission denied: notifications are not allowed for this page');
      new Notification(String(title || 'Hermitcrab'), { body: String(body || '') });
      return 'notification shown';
    },
    async download({ filename, content, mime_type: mime }) {
      const name = String(filename || 'download.txt').replace(/[\\/]/g, '_');
      const blob = new Blob([typeof content === 'string' ? content : JSON.stringify(content, null, 2)], { type: mime || 'text/plain' });
      const a = el('a', { href: URL.createObjectURL(blob), download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 60000);
      return `offered "${name}" (${blob.size} bytes) as a download`;
    },
    async open_tab({ url }) {
      const u = new URL(String(url));
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`only http and https URLs open in a tab, not ${u.protocol}`);
      const w = window.open(u.href, '_blank');
      if (!w) throw new Error('the browser blocked the new tab (pop-up blocker): the person can allow pop-ups for this page');
      w.opener = null;
      return 'opened ' + u.href;
    },
    get_geolocation() {
      need(navigator.geolocation, 'geolocation');
      return new Promise((resolve, reject) => navigator.geolocation.getCurrentPosition(
        p => resolve(JSON.stringify({ latitude: p.coords.latitude, longitude: p.coords.longitude, accuracy_m: p.coords.accuracy })),
        e => reject(new Error(e.code === 1 ? 'permission denied: the person did not allow location' : 'no position: ' + e.message)),
        { timeout: 20000 }));
    },
    listen({ lang, seconds }) {
      const SR = window.SpeechRecognition || window.webkitSpeechRecognition;
      need(SR, 'speech recognition');
      const ms = Math.min(Math.max(Number(seconds) || 10, 1), 120) * 1000;
      return new Promise((resolve, reject) => {
        const rec = new SR();
        const heard = [];
        let failed = '';
        rec.lang = lang || navigator.language;
        rec.continuous = true;
        rec.onresult = e => {
          for (let i = e.resultIndex; i < e.results.length; i++) if (e.results[i].isFinal) heard.push(e.results[i][0].transcript.trim());
        };
        rec.onerror = e => {
          if (e.error !== 'no-speech') failed = e.error === 'not-allowed' ? 'permission denied: the microphone is not allowed' : 'speech recognition failed: ' + e.error;
        };
        rec.onend = () => { clearTimeout(timer); failed ? reject(new Error(failed)) : resolve(heard.join(' ') || '(nothing was heard)'); };
        const timer = setTimeout(() => rec.stop(), ms);
        rec.start();
        line(`listening for up to ${ms / 1000} s…`);
      });
    },
    // The folder picker needs a user gesture, so ask the person with a button.
    fs_pick_directory() {
      need(window.showDirectoryPicker, 'File System Access API (folder access)');
      return new Promise((resolve, reject) => {
        const done = (err, text) => { panel.remove(); err ? reject(err) : resolve(text); };
        const panel = el('div', { class: 'hc-panel' }, el('p', {}, 'Hermitcrab asks for access to a folder on this computer.'),
          el('div', { class: 'hc-row' },
            el('button', { id: 'hc-fs-pick', type: 'button', onclick: async () => {
              try {
                folder = await window.showDirectoryPicker({ mode: 'readwrite' });
                done(null, `picked the folder "${folder.name}"; fs_* paths are relative to it`);
              } catch (e) {
                done(e.name === 'AbortError' ? new Error('permission denied: the person closed the folder picker') : e);
              }
            } }, 'Allow folder access'),
            el('button', { id: 'hc-fs-deny', type: 'button', onclick: () => done(new Error('permission denied: the person declined folder access')) }, 'Not now')));
        panels.append(panel);
      });
    },
    async fs_list({ path }) {
      const d = await fsDir(fsPath(path), false);
      const names = [];
      for await (const [name, h] of d.entries()) names.push(h.kind === 'directory' ? name + '/' : name);
      return names.sort().join('\n') || '(empty folder)';
    },
    async fs_read({ path }) {
      const [d, name] = await fsParent(path, false);
      const file = await (await d.getFileHandle(name)).getFile();
      if (file.size > FS_READ_MAX) throw new Error(`"${path}" is ${file.size} bytes; fs_read reads files up to ${FS_READ_MAX} bytes`);
      return await file.text();
    },
    async fs_write({ path, content }) {
      const [d, name] = await fsParent(path, true);
      const w = await (await d.getFileHandle(name, { create: true })).createWritable();
      await w.write(String(content ?? ''));
      await w.close();
      return `wrote ${String(content ?? '').length} characters to ${path}`;
    },
    async fs_mkdir({ path }) {
      await fsDir(fsPath(path), true);
      return `folder ${path} exists`;
    },
    async fs_delete({ path }) {
      const [d, name] = await fsParent(path, false);
      // Not recursive, so one call never wipes a whole tree.
      await d.removeEntry(name).catch(e => {
        throw e.name === 'InvalidModificationError' ? new Error(`folder "${path}" is not empty: delete what is inside it first`) : e;
      });
      return 'deleted ' + path;
    },
  };

  async function runBrowserTool(ev) {
    let content;
    let isError = false;
    try {
      if (!Object.prototype.hasOwnProperty.call(tools, ev.tool)) {
        throw new Error(`this page has no browser tool "${ev.tool}" (it has ${Object.keys(tools).join(', ')})`);
      }
      content = String(await tools[ev.tool](ev.input || {}));
    } catch (e) {
      isError = true;
      content = `${ev.tool} failed: ${describe(e)}`;
    }
    line(isError ? content : `browser tool ${ev.tool}: done`, isError ? 'error' : 'info');
    try {
      await api('POST', '/api/browser/result', { id: ev.id, content, is_error: isError });
    } catch (e) {
      line(`could not return the ${ev.tool} result to the server: ${e.message}`, 'error');
    }
  }

  // ---- what woke the instance while the person was away

  // awayPanel lists wakes the person has not seen (the triggers at wake
  // 0.4 and 0.5 fired, or a daily cap skipped them) until they dismiss it;
  // later wakes join the list. Texts go in as text, never as markup.
  let away = null;
  function awayPanel(wakes) {
    if (!wakes.length) return;
    if (!away) {
      const list = el('ul', { id: 'hc-away-list', style: 'margin: 0 0 12px; padding-left: 18px' });
      const seenBtn = el('button', { id: 'hc-away-seen', type: 'button', onclick: async () => {
        try { await api('POST', '/api/wakes/seen', { id: away.top }); } catch (e) { line('marking wakes seen: ' + e.message, 'error'); return; }
        away.panel.remove();
        away = null;
      } }, 'Seen');
      const panel = el('div', { class: 'hc-panel', id: 'hc-away' }, el('p', {}, 'While you were away, your instance woke itself:'), list, el('div', { class: 'hc-row' }, seenBtn));
      away = { panel, list, top: 0, rows: new Map() };
      panels.append(panel);
    }
    for (const w of wakes.slice().sort((a, b) => a.id - b.id)) {
      const when = new Date(w.at).toLocaleString();
      // A scripted wake's cost is starred, the star explained once under
      // the list (llm.ScriptedNote's words).
      const cost = w.cost_usd ? ` · $${w.cost_usd.toFixed(4)}${w.scripted_usd ? '*' : ''}` : '';
      if (w.scripted_usd && !document.getElementById('hc-away-scripted')) {
        away.list.after(el('p', { id: 'hc-away-scripted', style: 'margin: 0 0 12px' }, "* scripted: what the kernel's models would charge; nothing is charged"));
      }
      const reply = w.reply ? ` — ${w.reply.slice(0, 300)}` : '';
      const row = el('li', { class: 'hc-away-wake', 'data-status': w.status }, `${when} · ${w.where} · tier ${w.tier} · ${w.status}${cost}: ${w.reason}${reply}`);
      const old = away.rows.get(w.id);
      if (old) old.replaceWith(row); else away.list.append(row);
      away.rows.set(w.id, row);
      away.top = Math.max(away.top, w.id);
    }
  }

  async function showAway() {
    try {
      const r = await api('GET', '/api/wakes');
      awayPanel((r.wakes || []).filter(w => w.id > r.seen));
    } catch (e) {
      line('listing the wakes: ' + e.message, 'error');
    }
  }

  // ---- start

  async function start() {
    try {
      await loadState();
      line(`${hc.state.version} · deep ${hc.state.model} · light ${hc.state.fast_model}`);
      if (hc.state.demo) {
        panels.prepend(el('div', { id: 'hc-demo', class: 'hc-demo' }, 'Demo: a scripted model plays the LLM here (',
          code('hermitcrab serve --demo'), '). Its answers were written in advance, so no key is needed and nothing is charged; ' +
          'the kernel, the blocks and this page are real. Start ', code('hermitcrab serve'), ' with an API key to meet a real instance.'));
      }
      if (!hc.state.key_needed) keyBtn.remove();
      hc.props = makeProps(hc.state); // before any shell event can arrive
      openEvents();
      if (!hc.state.has_key) await keyPanel('');
      if (hc.state.empty_store && browserKeys().length) await importOffer();
    } catch (e) {
      line('cannot reach the Hermitcrab server: ' + e.message, 'error');
      return;
    }
    document.body.append(controls);
    showAway();
    const url = new URL(location.href);
    if (url.searchParams.get('boot') === '1') {
      // Drop ?boot=1 so that a reload restores the new shell instead of booting again.
      url.searchParams.delete('boot');
      history.replaceState(null, '', url);
      boot('?boot=1: booting again');
    } else if (hc.state.shell) {
      line(`restoring shell ${hc.state.shell.id}`);
      renderShell(hc.state.shell);
    } else {
      boot('no shell yet: booting');
    }
  }

  start();
})();
