export default class Shell extends React.Component {
  state = { count: 0 };
  render() {
    return <div onClick={() => this.setState({ count: this.state.count + 1 })}>clicks: {this.state.count} {this.props.version}</div>;
  }
}
