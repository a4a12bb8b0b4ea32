// Package policy is memgate's risk policy: a memory.Classifier backed by
// OPA. It serves the default policy embedded in the binary (default/: Rego
// modules, their Rego tests and a data document), or an operator's policy
// directory, or an OPA bundle pulled from a bundle server; it replaces the
// policy without a restart when that source changes, refusing a change that
// does not compile or fails its own Rego tests; and it replays a policy over
// the audit log to show what it would have decided differently.
//
// The query is prepared once per policy revision and swapped atomically;
// each evaluation builds the input as an AST value straight from the Go
// struct and decodes the decision straight from the AST result. See
// README.md for the input and decision documents, what the default policy
// recognises, and the benchmark.
package policy
