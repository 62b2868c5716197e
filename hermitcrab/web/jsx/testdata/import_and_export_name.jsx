import React, { useState, useEffect as useAfterRender } from 'react';
import { createPortal } from "react-dom";

function App({ callLLM, model }) {
  const [text, setText] = useState('…');
  useAfterRender(() => {
    callLLM([{ role: 'user', content: 'hello' }]).then(setText);
  }, []);
  return <main style={{ background: '#0a0a1a', color: '#fff' }}>{model}: {text}</main>;
}

export default App;
