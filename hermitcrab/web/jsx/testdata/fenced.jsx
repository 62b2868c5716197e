```jsx
function App() {
  return <div>{props.model}</div>;
}
```
