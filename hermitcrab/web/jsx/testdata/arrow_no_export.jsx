// A shell written as arrows, with nothing exported.
const { useState } = React;

const Shell = () => {
  const [note, setNote] = useState('');
  const banner = `Use <Tab> to switch panels; a literal "export default Nope" is just text
export default Nope
import Nothing from 'nowhere'`;
  return (
    <>
      <Header title="hermitcrab" />
      <pre>{banner}</pre>
      <p>
        import your own blocks here, then export default them — it's only text.
      </p>
      <textarea value={note} onChange={(e) => setNote(e.target.value)} />
      <p>{note.length < 10 ? 'short' : 'long'} · {props.version}</p>
    </>
  );
};

const Header = ({ title }) => <h1 style={{ color: '#9af' }}>{title}</h1>;
