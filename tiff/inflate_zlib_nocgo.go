//go:build zlib && !cgo

package tiff

// The zlib build tag binds the system zlib through cgo: build with
// CGO_ENABLED=1 (and zlib1g-dev installed), or without the tag.
var _ = zlibTagNeedsCgo
