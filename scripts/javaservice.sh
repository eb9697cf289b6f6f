# scripts/javaservice.sh: what scripts/tika and scripts/embedder share, sourced by both. Each runs a
# Java server on loopback, fetched once from Maven Central with mvn into a cache outside the
# repository (and, where it is a small front of our own, compiled once with the machine's javac),
# started in the background with a pid file, stopped only when the pid is really this server.
#
# The sourcing script sets, before calling these functions:
#   SERVICE        its name in messages ("scripts/tika")
#   CACHE          its cache directory; NODE_DIR, PID_FILE, LOG_FILE, URL and PORT of this port's server
#   START_TIMEOUT  seconds start may take
#   SERVER_MARKS   the words one of which the server's command line holds (its jar, its main class)
#   answers        a function: true once the server answers (its argument is a timeout in seconds)
# shellcheck shell=bash

readonly EXIT_MISSING_TOOL=3
# Pinned: Maven's default dependency plugin (2.8) is older than the flags used here.
readonly DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
# The quick compiler alone and the serial collector, for the JVMs that run seconds here (Maven,
# javac): the optimizing compiler's work would not pay off.
readonly QUICK_JVM="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

log() { printf '%s: %s\n' "$SERVICE" "$*" >&2; }
die() {
	log "$1"
	exit "${2:-1}"
}

# default_cache is the cache root: CRAWLSPACE_CACHE, else /var/cache/crawlspace for root and
# ~/.cache/crawlspace for the others.
default_cache() {
	if [[ -n ${CRAWLSPACE_CACHE:-} ]]; then
		printf '%s\n' "$CRAWLSPACE_CACHE"
	elif [[ $(id -u) -eq 0 ]]; then
		printf '/var/cache/crawlspace\n'
	else
		printf '%s/.cache/crawlspace\n' "${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}"
	fi
}

# lock serialises start and stop (and so the downloads) between concurrent callers.
lock() {
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock -w $((START_TIMEOUT + 300)) 9 || die "timed out waiting for $CACHE/.lock held by another start or stop"
}

# our_pid prints the pid from the pid file if that process is this port's server, whatever the
# file says otherwise (a reused pid, a stale file).
our_pid() {
	[[ -f $PID_FILE ]] || return 1
	local pid
	pid=$(<"$PID_FILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	is_our_server "$pid" || return 1
	printf '%s\n' "$pid"
}

is_our_server() {
	local cmdline mark
	cmdline=$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	# Our JVMs name this port's own temp directory and the port.
	grep -qxF -- "-Djava.io.tmpdir=$NODE_DIR/tmp" <<<"$cmdline" && grep -qxF -- "$PORT" <<<"$cmdline" || return 1
	for mark in "${SERVER_MARKS[@]}"; do
		grep -qxF -- "$mark" <<<"$cmdline" && return 0
	done
	return 1
}

# java_home finds a Java 17+ home: JAVA_HOME, then java on PATH. $1 names what needs it.
java_home() {
	local home="" java
	if [[ -n ${JAVA_HOME:-} && -x ${JAVA_HOME}/bin/java ]]; then
		home=$JAVA_HOME
	elif java=$(command -v java); then
		home=$(dirname "$(dirname "$(readlink -f "$java")")")
	fi
	[[ -n $home ]] || die "java not found (set JAVA_HOME or put Java 17+ on PATH; apt-get install openjdk-17-jdk-headless)" $EXIT_MISSING_TOOL
	local version major
	version=$("$home/bin/java" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n1)
	major=${version%%.*}
	[[ $major == 1 ]] && major=$(cut -d. -f2 <<<"$version")
	[[ $major =~ ^[0-9]+$ ]] && ((major >= 17)) ||
		die "$home/bin/java is version '${version:-unknown}'; $1 needs Java 17 or newer" $EXIT_MISSING_TOOL
	printf '%s\n' "$home"
}

need_mvn() {
	command -v mvn >/dev/null ||
		die "mvn not found: it fetches $1 from Maven Central once (apt-get install maven)" $EXIT_MISSING_TOOL
}

# fetch_dependencies HOME_DIR WHAT GROUP:ARTIFACT:VERSION... copies the artifacts with every runtime
# dependency into HOME_DIR/lib once; a lib directory without its marker is a partial download.
fetch_dependencies() {
	local home=$1 what=$2
	shift 2
	local lib=$home/lib
	[[ -f $lib/.crawlspace-complete ]] && return 0
	need_mvn "$what"
	log "downloading $what and its dependencies with mvn (once) ..."
	local tmp out started=$SECONDS coord g a v deps=""
	mkdir -p "$home"
	tmp=$(mktemp -d "$home/.fetch.XXXXXX")
	out=$tmp/mvn.log
	for coord in "$@"; do
		IFS=: read -r g a v <<<"$coord"
		deps+="<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>"
	done
	cat >"$tmp/pom.xml" <<-EOF
		<project xmlns="http://maven.apache.org/POM/4.0.0">
		  <modelVersion>4.0.0</modelVersion>
		  <groupId>crawlspace.local</groupId>
		  <artifactId>runtime</artifactId>
		  <version>1</version>
		  <packaging>pom</packaging>
		  <dependencies>$deps</dependencies>
		</project>
	EOF
	if ! (cd "$tmp" && MAVEN_OPTS="${MAVEN_OPTS:-} $QUICK_JVM" mvn -B -q "$DEPENDENCY_PLUGIN:copy-dependencies" -DincludeScope=runtime -DoutputDirectory="$tmp/lib" </dev/null >"$out" 2>&1); then
		tail -n 20 "$out" >&2
		rm -rf "$tmp"
		die "mvn could not fetch $what (output above)"
	fi
	touch "$tmp/lib/.crawlspace-complete"
	rm -rf "$lib"
	mv "$tmp/lib" "$lib"
	rm -rf "$tmp"
	log "downloaded $(du -sh "$lib" | cut -f1) in $((SECONDS - started))s"
}

# compile_source JAVA_HOME SOURCE HOME_DIR builds SOURCE against HOME_DIR/lib into HOME_DIR/classes,
# again whenever the source changes.
compile_source() {
	local jhome=$1 source=$2 home=$3 sum
	local classes=$home/classes
	sum=$(sha256sum "$source" | cut -d' ' -f1)
	[[ -f $classes/.source-$sum ]] && return 0
	[[ -x $jhome/bin/javac ]] ||
		die "$jhome has no javac, which builds $source (apt-get install openjdk-17-jdk-headless)" $EXIT_MISSING_TOOL
	log "compiling $source ..."
	local tmp
	tmp=$(mktemp -d "$home/.classes.XXXXXX")
	if ! "$jhome/bin/javac" -J-XX:TieredStopAtLevel=1 -nowarn -encoding UTF-8 -cp "$home/lib/*" -d "$tmp" "$source" >&2; then
		rm -rf "$tmp"
		die "javac failed on $source (output above)"
	fi
	touch "$tmp/.source-$sum"
	rm -rf "$classes"
	mv "$tmp" "$classes"
}

# refuse_taken_port exits when something this script did not start holds the port.
refuse_taken_port() {
	rm -f "$PID_FILE"
	if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
		die "port $PORT is taken by a process this script did not start; stop it or set $1"
	fi
}

# launch COMMAND... starts the server in the background and waits until it answers, then prints
# its URL; on failure it leaves nothing running.
launch() {
	local started=$SECONDS pid
	mkdir -p "$NODE_DIR/tmp"
	# setsid: the server outlives this script and is not in the caller's process group, so a ^C
	# in a test run reaches it only through `stop`. It must not inherit the lock (fd 9), or every
	# later start and stop would wait for it. The JVM's crash files go to its directory.
	(cd "$NODE_DIR" && exec setsid "$@" </dev/null >"$LOG_FILE" 2>&1 9>&-) &
	pid=$!
	printf '%s\n' "$pid" >"$PID_FILE"
	until answers 2; do
		if ((SECONDS - started >= START_TIMEOUT)) || ! kill -0 "$pid" 2>/dev/null; then
			tail -n 30 "$LOG_FILE" >&2 || true
			# A failed start leaves nothing running, so the next start begins clean.
			is_our_server "$pid" && kill -KILL "$pid" 2>/dev/null || true
			rm -f "$PID_FILE"
			die "the server (pid $pid) did not answer $URL within ${START_TIMEOUT}s; see $LOG_FILE"
		fi
		sleep 0.2
	done
	log "answering after $((SECONDS - started))s (pid $pid)"
	printf '%s\n' "$URL"
}

# already_running prints the URL and succeeds when this port's server runs.
already_running() {
	local pid
	pid=$(our_pid) || return 1
	log "already running (pid $pid)"
	printf '%s\n' "$URL"
}

cmd_stop() {
	lock
	local pid
	if ! pid=$(our_pid); then
		[[ -f $PID_FILE ]] && log "removing stale pid file $PID_FILE (its process is not this server)"
		rm -f "$PID_FILE"
		log "not running"
		return 0
	fi
	log "stopping pid $pid ..."
	kill -TERM "$pid"
	local i
	for ((i = 0; i < 300; i++)); do
		is_our_server "$pid" || break
		sleep 0.1
	done
	if is_our_server "$pid"; then
		log "pid $pid still running after 30s; killing it"
		kill -KILL "$pid"
		while is_our_server "$pid"; do sleep 0.1; done
	fi
	# A dying process loses its command line before its sockets: a start
	# right after must not find the port still taken.
	for ((i = 0; i < 50; i++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$PID_FILE"
	log "stopped"
}

cmd_status() {
	if our_pid >/dev/null; then
		printf 'running %s\n' "$URL"
		return 0
	fi
	printf 'stopped\n'
	return 1
}
