// Package packaging holds the tests of what the project ships, made by
// its own scripts: the stamped static binaries, checksums and software
// bill of materials of scripts/release, and the container image of
// scripts/image, read as an OCI archive and run with podman against the
// real Elasticsearch node (docs/deploying.md).
package packaging
