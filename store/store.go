// Package store defines the Store interface every event-log backend
// implements (its contract is in the doc comments below and is checked by the
// storetest conformance suite), and the Engine: the one path every write
// takes (load → decide → append → publish).
package store

import (
	"context"
	"time"

	"github.com/canvasd/canvasd/canvas"
)

// Capabilities are the optional parts of a backend: what it can do besides
// the Store methods, each nil (zero) when it cannot.
type Capabilities struct {
	// Notifier: other processes write the store too (PostgreSQL), and it
	// tells of their appends.
	Notifier Notifier
	// Broadcaster carries ephemeral messages between those processes.
	Broadcaster Broadcaster
	// Agents keeps the agent's sessions and turns.
	Agents AgentStore
	// OpTimeout bounds each operation (a remote database; 0: none). The
	// engine bounds a whole write by it, the wait behind the canvas's
	// earlier writes included (EngineConfig.WriteTimeout).
	OpTimeout time.Duration
}

// Store persists canvases, their event logs, state snapshots, idempotency
// records and tokens. All methods are safe for concurrent use. Errors wrap
// the canvas sentinels (canvas.ErrNotFound, ...); a backend that cannot be
// reached returns an error wrapping canvas.ErrUnavailable. The message of a
// not-found or already-exists error names what was asked for (`canvas "x":
// not found`) and nothing of the backend: the API shows it to the client.
type Store interface {
	// CreateCanvas stores a new canvas with head 0. An existing id is canvas.ErrAlreadyExists.
	CreateCanvas(ctx context.Context, c canvas.Canvas) error
	// GetCanvas returns the canvas with its stored head revision, or canvas.ErrNotFound.
	GetCanvas(ctx context.Context, id string) (canvas.Canvas, error)
	// ListCanvases returns every canvas ordered by creation time, then id.
	ListCanvases(ctx context.Context) ([]canvas.Canvas, error)
	// DeleteCanvas removes a canvas with its log, snapshots and idempotency
	// records, or returns canvas.ErrNotFound.
	DeleteCanvas(ctx context.Context, id string) error

	// Append atomically appends commits (revisions expectedHead+1, +2, ... in
	// order, gap-free) to a canvas's log, moves its head to the last one, and
	// stores the idempotency records, all in one transaction that is durable
	// when Append returns nil (it survives a kill -9 of the process).
	// If the stored head is not expectedHead it writes nothing and returns
	// canvas.ErrHeadMismatch; if any record's key is already stored for the
	// canvas it writes nothing and returns canvas.ErrDuplicateIdempotencyKey;
	// a missing canvas is canvas.ErrNotFound. An error wrapping
	// canvas.ErrUnavailable also wraps canvas.ErrNotWritten when the store
	// knows nothing was written, or canvas.ErrOutcomeUnknown when the
	// transaction may have committed; unmarked, the engine takes it as
	// unknown.
	Append(ctx context.Context, canvasID string, expectedHead int64, commits []canvas.Commit, idem []IdempotencyRecord) error
	// ReadCommits returns up to limit commits with rev > afterRev in ascending
	// order (an empty slice past the head); a missing canvas is canvas.ErrNotFound.
	ReadCommits(ctx context.Context, canvasID string, afterRev int64, limit int) ([]canvas.Commit, error)

	// SaveStateSnapshot stores the materialized state of a canvas at snap.Rev.
	// Saving a rev that is already stored replaces it.
	SaveStateSnapshot(ctx context.Context, canvasID string, snap StateSnapshot) error
	// LoadStateSnapshot returns the stored snapshot with the greatest Rev ≤ atOrBefore,
	// or canvas.ErrNotFound when there is none.
	LoadStateSnapshot(ctx context.Context, canvasID string, atOrBefore int64) (StateSnapshot, error)

	// GetIdempotency returns the record stored for (canvasID, key), or canvas.ErrNotFound.
	GetIdempotency(ctx context.Context, canvasID, key string) (IdempotencyRecord, error)
	// PruneIdempotency deletes records created before cutoff and says how many.
	PruneIdempotency(ctx context.Context, cutoff time.Time) (int64, error)

	// CreateNamedSnapshot stores a user-visible snapshot marker (label, rev).
	// An existing id is canvas.ErrAlreadyExists; a missing canvas canvas.ErrNotFound.
	CreateNamedSnapshot(ctx context.Context, s NamedSnapshot) error
	// GetNamedSnapshot returns one marker, or canvas.ErrNotFound.
	GetNamedSnapshot(ctx context.Context, canvasID, id string) (NamedSnapshot, error)
	// ListNamedSnapshots returns a canvas's markers, oldest first.
	ListNamedSnapshots(ctx context.Context, canvasID string) ([]NamedSnapshot, error)

	// CreateToken stores a token by its hash. An existing actor id is canvas.ErrAlreadyExists.
	CreateToken(ctx context.Context, t TokenRecord) error
	// TokenByHash returns the token with that SHA-256 hash, or canvas.ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (TokenRecord, error)
	// TokenByActor returns the token of an actor, or canvas.ErrNotFound.
	TokenByActor(ctx context.Context, actorID string) (TokenRecord, error)
	// ListTokens returns every token ordered by creation time, then actor id.
	ListTokens(ctx context.Context) ([]TokenRecord, error)
	// RevokeToken deletes the token of an actor, or returns canvas.ErrNotFound.
	RevokeToken(ctx context.Context, actorID string) error
	// RenewToken moves the expiry of an actor's token to expiresAt (also
	// when it has passed, as long as the token was not pruned), or returns
	// canvas.ErrNotFound. Token reads return expired tokens too; callers
	// refuse them (TokenRecord.Expired).
	RenewToken(ctx context.Context, actorID string, expiresAt time.Time) error
	// PruneTokens deletes the tokens whose expiry is at or before now and
	// says how many; tokens without an expiry stay.
	PruneTokens(ctx context.Context, now time.Time) (int64, error)

	HostStore

	// Capabilities says what the backend can do besides these methods.
	Capabilities() Capabilities

	// Ping reports whether the backend is reachable (for /readyz).
	Ping(ctx context.Context) error
	// Close releases the backend's resources.
	Close() error
}

// HostStore keeps what the canvas host shares between the processes of a
// deployment: each host session's files (agent-written pages and assets) and
// its A2UI state, and named secrets (the page-ticket key). Session names and
// paths reach it validated by package host; the store keeps paths as given
// and compares them byte for byte (case-sensitive, no normalization).
//
// A session's files form a tree: "a/b.html" lies in directory "a". A
// directory exists while a file lies under it; there are no empty
// directories. A path can never be both a file and a directory.
type HostStore interface {
	// PutHostFile stores f (Session, Path, Data, Modified; Size is taken
	// from Data) as one write, replacing the file at that path; created
	// says the path held no file before. A path that is a directory (a file
	// lies under Path+"/"), or one of whose parent directories is a file, is
	// canvas.ErrConflict and writes nothing, also when two processes race.
	PutHostFile(ctx context.Context, f canvas.HostFile) (created bool, err error)
	// GetHostFile returns the file at path with its data, or
	// canvas.ErrNotFound (also when path is a directory).
	GetHostFile(ctx context.Context, session, path string) (canvas.HostFile, error)
	// HostDirExists reports whether a file lies under dir+"/" (dir "" is the
	// session root: whether the session has any file).
	HostDirExists(ctx context.Context, session, dir string) (bool, error)
	// DeleteHostFile removes the file at path, or returns canvas.ErrNotFound
	// when no file is there (a directory included).
	DeleteHostFile(ctx context.Context, session, path string) error
	// ListHostFiles returns up to limit files of the session without their
	// data, ordered by path byte for byte; a session without files has none
	// (an empty slice, not an error).
	ListHostFiles(ctx context.Context, session string, limit int) ([]canvas.HostFile, error)

	// LoadHostState returns the session's A2UI state document and its
	// version: 0 and nil when none was ever saved.
	LoadHostState(ctx context.Context, session string) (version int64, data []byte, err error)
	// SaveHostState replaces the session's state with data as version
	// expected+1, when the stored version is expected; otherwise it writes
	// nothing and returns canvas.ErrHeadMismatch (another writer saved
	// first: load and retry). Of concurrent saves from one version exactly
	// one succeeds.
	SaveHostState(ctx context.Context, session string, expected int64, data []byte) error

	// SharedSecret returns the secret stored under name, first storing
	// candidate when there is none, so every process sharing the store gets
	// the same bytes. candidate must not be empty.
	SharedSecret(ctx context.Context, name string, candidate []byte) ([]byte, error)
}

// Notifier is implemented by stores shared between processes (PostgreSQL).
// Listen blocks until ctx ends, calling wake(canvasID) after another process
// appended to that canvas; wake("") means notifications may have been missed
// (the listener reconnected) and every live canvas must catch up from the log.
type Notifier interface {
	Listen(ctx context.Context, wake func(canvasID string)) error
}

// Broadcaster is implemented by stores shared between processes (PostgreSQL)
// that also carry ephemeral messages between them: SSE events that are never
// stored (gesture, agent:*, invoke) and the relay's own bookkeeping.
//
// Broadcast sends payload under topic to every other process's
// ListenBroadcast, at most once each, never to the sender's own listeners;
// delivery is best effort (a listener that is reconnecting misses messages).
// Messages of one sender arrive in the order they were sent. topic is 1 to
// 64 bytes of UTF-8 without NUL or line breaks; a payload beyond the backend's
// limit is refused with an error wrapping canvas.ErrTooLarge. Broadcast may
// block for one database round trip: callers that must not block queue.
//
// ListenBroadcast blocks until ctx ends (or the store is closed) and calls
// deliver(topic, payload) for each message another process broadcast, from
// one goroutine (deliver must not block for long). deliver("", nil) means the
// listener has just (re)connected and messages may have been missed.
type Broadcaster interface {
	Broadcast(ctx context.Context, topic string, payload []byte) error
	ListenBroadcast(ctx context.Context, deliver func(topic string, payload []byte)) error
}

// StateSnapshot is a serialized canvas.State at Rev, written by reducer.Schema
// version Schema. A snapshot with another schema is ignored and rebuilt.
type StateSnapshot struct {
	Rev    int64
	Schema int
	Data   []byte
	// EventID, when set, is the event id of the commit at Rev: the store
	// saves the snapshot only while that commit is in the canvas's log
	// (ErrNotFound otherwise), so a snapshot of a deleted canvas never lands
	// in a canvas created again under its id. Loads leave it empty.
	EventID string
}

// Outcome is what became of a command or batch the Engine executed. The API
// maps outcomes to HTTP statuses (and errors to problem documents) in one place.
type Outcome string

// Outcomes.
const (
	// OutcomeApplied: committed; the result is a canvas.RevisionResult (for a
	// batch, a BatchResult).
	OutcomeApplied Outcome = "applied"
	// OutcomeConflict: not committed, because what the command touches changed
	// after its base_rev (or strict is set); the result is a
	// canvas.ConflictResult with recovery_ops.
	OutcomeConflict Outcome = "conflict"
)

// Answer is the Engine's answer to a command or batch.
type Answer struct {
	Outcome  Outcome
	Result   []byte // the result document as JSON; a replay returns the original bytes
	Replayed bool   // the stored answer to an earlier command with the same idempotency key
}

// IdempotencyRecord is the stored answer to a command (or batch) sent with
// an idempotency key: replays return Outcome and Result unchanged.
type IdempotencyRecord struct {
	CanvasID    string
	Key         string
	Fingerprint string  // canvas.Envelope.Fingerprint of the original envelope
	Outcome     Outcome // what became of the original command
	Result      []byte  // the original answer's result document (JSON)
	Rev         int64   // revision the command committed as
	CreatedAt   time.Time
}

// NamedSnapshot is a user-visible marker of a canvas revision.
type NamedSnapshot struct {
	CanvasID    string    `json:"canvas_id"`
	ID          string    `json:"snapshot_id"`
	Label       string    `json:"label"`
	Description string    `json:"description"`
	Rev         int64     `json:"rev"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"timestamp"`
}

// TokenRecord is a stored API token. Only the SHA-256 hash of the secret is kept.
type TokenRecord struct {
	Hash      []byte
	ActorID   string
	ActorType canvas.ActorType
	Role      canvas.Role
	Canvases  []string // empty: every canvas
	Name      string
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never expires
}

// Expired reports whether the token's expiry is at or before now.
func (t TokenRecord) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}
