// Package wakes runs the wake triggers an instance writes at wake 0.4 and
// 0.5 (package trigger reads the lines): a Runner fires each due trigger
// once per due time across processes, within the daily caps and a budget
// that bounds every request of a wake, and carries the messages, webhook
// posts and page changes that woke it until the model answered. See
// docs/hermitcrab-network.md#wake-triggers for the rules, each pinned by a
// test here.
package wakes
