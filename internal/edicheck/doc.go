// Package edicheck holds no code: its test reads every kind of reply
// Lazaret writes (CONTRL, APERAK) with two independent UN/EDIFACT parsers
// from npm, edifact and ts-edifact (package.json, package-lock.json; run
// npm ci here first), and checks them against the message directory.
// Without node or the modules the test skips, and fails under CI=true.
package edicheck
