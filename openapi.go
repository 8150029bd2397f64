// Package canvasd holds files embedded from the repository root: the OpenAPI
// document that is the HTTP contract (docs/api.md explains it).
package canvasd

import _ "embed"

// Spec is openapi.yaml, the OpenAPI 3.0.3 description of every HTTP route,
// served verbatim at GET /openapi.yaml (Content-Type application/yaml). It is
// embedded at build time; callers must treat it as read-only.
//
//go:embed openapi.yaml
var Spec []byte
