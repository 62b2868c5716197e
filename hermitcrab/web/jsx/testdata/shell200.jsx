// Hermitcrab shell: chat, blocks and a status bar. Written by the LLM at boot.
const { useState, useEffect, useRef, useCallback, useMemo } = React;

const theme = {
  bg: '#0a0a1a',
  panel: '#12122a',
  border: '#2a2a4a',
  text: '#e0e0ff',
  dim: '#8888aa',
  accent: '#7aa2ff',
  warn: '#ffb86b',
};

const styles = {
  app: { background: theme.bg, color: theme.text, minHeight: '100vh', display: 'flex', flexDirection: 'column', fontFamily: 'system-ui, sans-serif' },
  header: { display: 'flex', alignItems: 'center', gap: 12, padding: '10px 16px', borderBottom: `1px solid ${theme.border}` },
  tabs: { display: 'flex', gap: 4 },
  tab: (active) => ({ padding: '6px 12px', borderRadius: 6, cursor: 'pointer', background: active ? theme.panel : 'transparent', color: active ? theme.accent : theme.dim, border: 'none' }),
  body: { flex: 1, display: 'flex', overflow: 'hidden' },
  chat: { flex: 1, display: 'flex', flexDirection: 'column', padding: 16, gap: 8, overflowY: 'auto' },
  input: { display: 'flex', gap: 8, padding: 12, borderTop: `1px solid ${theme.border}` },
  textarea: { flex: 1, background: theme.panel, color: theme.text, border: `1px solid ${theme.border}`, borderRadius: 6, padding: 8, resize: 'none' },
  button: { background: theme.accent, color: theme.bg, border: 'none', borderRadius: 6, padding: '8px 14px', cursor: 'pointer' },
  status: { padding: '4px 16px', fontSize: 12, color: theme.dim, borderTop: `1px solid ${theme.border}` },
};

function formatTime(d) {
  const pad = (n) => String(n).padStart(2, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function Message({ m }) {
  const mine = m.role === 'user';
  const text = typeof m.content === 'string' ? m.content : m.content.map((b) => b.text || '').join('');
  return (
    <div style={{ alignSelf: mine ? 'flex-end' : 'flex-start', maxWidth: '75%' }}>
      <div style={{ fontSize: 11, color: theme.dim, marginBottom: 2 }}>{mine ? 'you' : 'hermitcrab'} · {m.time || ''}</div>
      <div style={{ background: mine ? '#1e1e44' : theme.panel, padding: '8px 12px', borderRadius: 8, whiteSpace: 'pre-wrap' }}>
        {text}
      </div>
    </div>
  );
}

function Chat({ callLLM, conversation, onStatus }) {
  const [messages, setMessages] = useState([]);
  const [draft, setDraft] = useState('');
  const [busy, setBusy] = useState(false);
  const end = useRef(null);

  useEffect(() => {
    conversation.load().then((saved) => { if (Array.isArray(saved)) setMessages(saved); });
  }, []);

  useEffect(() => {
    if (end.current) end.current.scrollIntoView({ behavior: 'smooth' });
  }, [messages]);

  const send = useCallback(async () => {
    const content = draft.trim();
    if (!content || busy) return;
    const next = [...messages, { role: 'user', content, time: formatTime(new Date()) }];
    setMessages(next);
    setDraft('');
    setBusy(true);
    onStatus('thinking…');
    try {
      const reply = await callLLM(next.map(({ role, content }) => ({ role, content })));
      const all = [...next, { role: 'assistant', content: reply, time: formatTime(new Date()) }];
      setMessages(all);
      await conversation.save(all);
      onStatus(`${all.length} messages`);
    } catch (err) {
      onStatus(`error: ${err.message}`);
    } finally {
      setBusy(false);
    }
  }, [draft, busy, messages]);

  const onKey = (e) => {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      send();
    }
  };

  return (
    <div style={{ flex: 1, display: 'flex', flexDirection: 'column' }}>
      <div style={styles.chat}>
        {messages.length === 0 && <p style={{ color: theme.dim }}>Say hello. I'll remember what matters.</p>}
        {messages.map((m, i) => <Message key={i} m={m} />)}
        <div ref={end} />
      </div>
      <div style={styles.input}>
        <textarea rows={2} style={styles.textarea} value={draft} onChange={(e) => setDraft(e.target.value)} onKeyDown={onKey} placeholder="Write to hermitcrab (Enter sends, Shift+Enter for a new line)" />
        <button style={styles.button} disabled={busy} onClick={send}>{busy ? '…' : 'Send'}</button>
      </div>
    </div>
  );
}

function BlockTree({ node, path }) {
  if (node == null) return null;
  if (typeof node === 'string') return <div style={{ paddingLeft: 12 }}><code>{path}</code> {node}</div>;
  const keys = Object.keys(node).filter((k) => k !== '_').sort();
  return (
    <div style={{ paddingLeft: 12 }}>
      {node._ && <div><code>{path}</code> {node._}</div>}
      {keys.map((k) => <BlockTree key={k} node={node[k]} path={path + k} />)}
    </div>
  );
}

function Blocks({ blockList, blockRead, onStatus }) {
  const [names, setNames] = useState([]);
  const [selected, setSelected] = useState(null);
  const [block, setBlock] = useState(null);
  const [filter, setFilter] = useState('');

  useEffect(() => {
    blockList().then((list) => setNames(list.map((b) => (typeof b === 'string' ? b : b.name))));
  }, []);

  useEffect(() => {
    if (!selected) return;
    onStatus(`reading ${selected}…`);
    blockRead(selected).then((b) => { setBlock(b); onStatus(`${selected} loaded`); });
  }, [selected]);

  const shown = useMemo(() => names.filter((n) => n.includes(filter)), [names, filter]);

  return (
    <div style={{ flex: 1, display: 'flex' }}>
      <div style={{ width: 200, borderRight: `1px solid ${theme.border}`, padding: 8 }}>
        <input value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="filter" style={{ width: '100%', marginBottom: 8 }} />
        {shown.map((n) => (
          <div key={n} onClick={() => setSelected(n)} style={{ padding: 4, cursor: 'pointer', color: n === selected ? theme.accent : theme.text }}>
            {n}
          </div>
        ))}
      </div>
      <div style={{ flex: 1, padding: 12, overflowY: 'auto', fontSize: 13 }}>
        {block ? <BlockTree node={block.tree || block} path="" /> : <p style={{ color: theme.dim }}>Pick a block to read it.</p>}
      </div>
    </div>
  );
}

function Settings({ model, fastModel, version, setTools }) {
  const [tools, setToolsText] = useState('');
  const [result, setResult] = useState('');
  const apply = async () => {
    const list = tools.split(',').map((t) => t.trim()).filter(Boolean);
    const r = await setTools(list);
    setResult(typeof r === 'string' ? r : JSON.stringify(r));
  };
  return (
    <div style={{ padding: 16, lineHeight: 1.8 }}>
      <div>deep model: <b>{model}</b></div>
      <div>fast model: <b>{fastModel}</b></div>
      <div>kernel: <b>{version}</b></div>
      <div style={{ marginTop: 12 }}>
        <input value={tools} onChange={(e) => setToolsText(e.target.value)} placeholder="tools, comma separated" style={{ width: 300 }} />
        <button style={{ ...styles.button, marginLeft: 8 }} onClick={apply}>Set tools</button>
      </div>
      {result && <pre style={{ color: theme.warn }}>{result}</pre>}
    </div>
  );
}

function StatusBar({ text, started }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const up = Math.round((now - started) / 1000);
  return <div style={styles.status}>{text} · up {up < 60 ? `${up}s` : `${Math.floor(up / 60)}m`}</div>;
}

const TABS = ['chat', 'blocks', 'settings'];

function App() {
  const [tab, setTab] = useState('chat');
  const [status, setStatus] = useState('ready');
  const started = useMemo(() => Date.now(), []);

  return (
    <div style={styles.app}>
      <header style={styles.header}>
        <span style={{ fontWeight: 600 }}>🦀 hermitcrab</span>
        <nav style={styles.tabs}>
          {TABS.map((t) => (
            <button key={t} style={styles.tab(t === tab)} onClick={() => setTab(t)}>{t}</button>
          ))}
        </nav>
      </header>
      <div style={styles.body}>
        {tab === 'chat' && <Chat callLLM={props.callLLM} conversation={props.conversation} onStatus={setStatus} />}
        {tab === 'blocks' && <Blocks blockList={props.blockList} blockRead={props.blockRead} onStatus={setStatus} />}
        {tab === 'settings' && (
          <Settings model={props.model} fastModel={props.fastModel} version={props.version} setTools={props.setTools} />
        )}
      </div>
      <StatusBar text={status} started={started} />
    </div>
  );
}
