// Package host is canvasd's canvas host: it serves agent-written pages from
// the store (each host session's files, under path rules strict enough that
// no name can reach outside its session), validates and keeps A2UI v0.8
// surfaces per session, fans session events (reload, a2ui, present, invoke)
// out to browsers through bounded per-subscriber queues (and, through a
// Relay, to the browsers of the other processes sharing the store), brokers
// server→browser invoke calls, and validates and stores image messages by
// content hash. It depends only on package canvas; the HTTP routes live in
// package api.
package host
