//go:build libdeflate && !cgo

package validate

// The libdeflate build tag binds the system libdeflate through cgo: build
// with CGO_ENABLED=1 (and libdeflate-dev installed), or without the tag.
var _ = libdeflateTagNeedsCgo
