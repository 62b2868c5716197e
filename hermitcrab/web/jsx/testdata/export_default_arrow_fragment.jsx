export default () => {
  const [open, setOpen] = React.useState(false);
  return (
    <>
      <button onClick={() => setOpen(!open)}>{open ? 'close' : 'open'}</button>
      {open && <>
        <p>blocks: {props.blockList ? 'yes' : 'no'}</p>
      </>}
    </>
  );
};
