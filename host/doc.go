// Package host is canvasd's canvas host: it serves agent-written pages from
// <data-dir>/host/<session>/ (confined with os.Root so no request can leave
// the session directory), validates and keeps A2UI v0.8 surfaces per session,
// fans session events (reload, a2ui, present, invoke) out to browsers through
// bounded per-subscriber queues, brokers server→browser invoke calls, and
// validates and stores image messages by content hash. It depends only on
// package canvas; the HTTP routes live in package api.
package host
