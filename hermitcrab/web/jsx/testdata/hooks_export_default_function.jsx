const { useState, useEffect, useRef } = React;

function Bubble({ role, text }) {
  const mine = role === 'user';
  return (
    <div style={{ textAlign: mine ? 'right' : 'left', margin: '6px 0' }}>
      <span style={{ background: mine ? '#2a2a5a' : '#1a1a3a', padding: '6px 10px', borderRadius: 8 }}>{text}</span>
    </div>
  );
}

export default function App() {
  const [messages, setMessages] = useState([]);
  const [draft, setDraft] = useState('');
  const end = useRef(null);
  useEffect(() => { end.current?.scrollIntoView(); }, [messages]);

  async function send() {
    const next = [...messages, { role: 'user', content: draft }];
    setMessages(next);
    setDraft('');
    const reply = await props.callLLM(next);
    setMessages([...next, { role: 'assistant', content: reply }]);
  }

  return (
    <div style={{ background: '#0a0a1a', color: '#e0e0ff', minHeight: '100vh', padding: 16 }}>
      <h1>Hermitcrab</h1>
      <p>I'm awake. Don't worry if I'm slow: {props.model}</p>
      {messages.map((m, i) => <Bubble key={i} role={m.role} text={m.content} />)}
      <div ref={end} />
      <input value={draft} onChange={e => setDraft(e.target.value)} onKeyDown={e => e.key === 'Enter' && send()} />
      <button onClick={send}>Send</button>
    </div>
  );
}
