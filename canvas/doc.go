// Package canvas holds canvasd's domain types: nodes, edges, the materialized
// state, command envelopes, commits and their changes, actors and roles, and
// the sentinel errors every layer translates to and from. It does no I/O.
package canvas
