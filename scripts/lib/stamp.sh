# shellcheck shell=bash
# Sourced by scripts/build, scripts/image and scripts/release: what a build is stamped with, so
# that the binary (`crawlspace version`), the image's labels and the release's names agree.
# Each prints nothing (an empty stamp) where it cannot know.

# stamp_revision: the commit being built; none outside a git checkout.
stamp_revision() {
	git rev-parse HEAD 2>/dev/null || true
}

# stamp_epoch: SOURCE_DATE_EPOCH when set, else the commit's time: the same commit stamps the
# same date, so the same Go version builds the same bytes.
stamp_epoch() {
	if [[ -n ${SOURCE_DATE_EPOCH:-} ]]; then
		printf '%s\n' "$SOURCE_DATE_EPOCH"
	else
		git log -1 --format=%ct HEAD 2>/dev/null || true
	fi
}

# stamp_date: stamp_epoch in RFC 3339, UTC.
stamp_date() {
	local epoch
	epoch=$(stamp_epoch)
	[[ -n $epoch ]] && date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ
	return 0
}

# stamp_version [V]: V, else devel-<12 digits of the commit>, else devel.
stamp_version() {
	local rev
	if [[ -n ${1:-} ]]; then
		printf '%s\n' "$1"
		return
	fi
	rev=$(stamp_revision)
	if [[ -n $rev ]]; then
		printf 'devel-%s\n' "${rev:0:12}"
	else
		printf 'devel\n'
	fi
}
