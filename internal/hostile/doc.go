// Package hostile serves, on loopback, the sites a crawler meets in the
// wild and must survive without hanging, hammering or running out of
// memory: spider traps, compression bombs, bodies that drip, redirect
// loops, encodings that lie. The provider tests and bench/soak crawl them.
//
// Each hazard is an http.Handler of its own, so a test mounts only the
// ones it is about.
package hostile
