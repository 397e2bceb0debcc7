# Sourced by the Python conformance suites' run.sh scripts (pyiceberg,
# duckdb, schemathesis, spark, trino, s3): one way to check the
# interpreter, to keep a suite's virtualenv under .cache/, and to run its
# pytest (floe_pytest, below).
#
# floe_venv LABEL NAME REQUIREMENTS [NOTE] makes sure $root/.cache/NAME is a
# virtualenv with REQUIREMENTS installed, and sets venv to its path. It is
# (re)built only when the requirements or the Python version change: a
# stamp file inside it holds the hash of both. pip's download cache is
# .cache/pip, so nothing is cached outside the repository. It expects root
# and python (the interpreter, 3.10+) to be set; LABEL starts its messages;
# NOTE is said while installing (e.g. how large the download is).

floe_venv() {
	local label="$1" name="$2" requirements="$3" note="${4:-}"
	venv="$root/.cache/$name"
	local stamp="$venv/.floe-requirements.sha256"

	if ! command -v "$python" >/dev/null 2>&1; then
		echo "$label: $python not found; install Python 3.10+ with pip" >&2
		exit 1
	fi
	"$python" - "$label" <<'PY' || exit 1
import sys
if sys.version_info < (3, 10):
    sys.exit(f"{sys.argv[1]}: Python 3.10+ needed, {sys.executable} is {sys.version.split()[0]}")
PY

	local want
	want="$( { "$python" -c 'import sys; print(sys.version)'; cat "$requirements"; } | sha256sum | cut -d' ' -f1)"
	if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		echo "$label: virtualenv $venv is up to date"
		return 0
	fi
	echo "$label: creating $venv and installing $(basename "$requirements")${note:+ ($note)}"
	rm -rf "$venv"
	mkdir -p "$root/.cache"
	export PIP_CACHE_DIR="$root/.cache/pip" PIP_DISABLE_PIP_VERSION_CHECK=1
	local pip
	if "$python" -m venv "$venv" 2>/dev/null && [[ -x "$venv/bin/pip" ]]; then
		pip=("$venv/bin/python" -m pip)
	else
		# Debian-style interpreters without ensurepip (python3-venv not
		# installed): make a bare venv and let the interpreter's own pip
		# install into it.
		echo "$label: venv has no pip; installing with $python -m pip --python"
		rm -rf "$venv"
		"$python" -m venv --without-pip "$venv"
		pip=("$python" -m pip --python "$venv/bin/python")
	fi
	"${pip[@]}" install --quiet --prefer-binary --no-input -r "$requirements"
	echo "$want" >"$stamp"
}

# floe_pytest LABEL CACHE DEFAULT_TIMEOUT runs the suite in $here with the
# virtualenv's pytest, quietly, from $root, its cache in $root/.cache/CACHE,
# within PYTEST_TIMEOUT seconds (default DEFAULT_TIMEOUT), and exits with
# pytest's status: 0 all passed, 1 some failed, 5 nothing collected, 124
# out of time; anything but 0 fails the build and is said in one line.
# PYTEST_ARGS is split as a shell splits words, quotes included
# (PYTEST_ARGS="-k 'operations or etl_merges'"), without evaluating it.
floe_pytest() {
	local label="$1" cache="$2" limit="${PYTEST_TIMEOUT:-$3}"
	local args=() split status=0
	if [[ -n "${PYTEST_ARGS:-}" ]]; then
		split="$("$venv/bin/python" -c 'import shlex, sys; print("\n".join(shlex.split(sys.argv[1])))' "$PYTEST_ARGS")" || {
			echo "$label: cannot split PYTEST_ARGS: $PYTEST_ARGS" >&2
			exit 1
		}
		mapfile -t args <<<"$split"
	fi
	cd "$root"
	timeout -k 60 "$limit" "$venv/bin/python" -m pytest -q -c "$here/pytest.ini" --rootdir "$here" -o cache_dir="$root/.cache/$cache" "$here" "${args[@]}" || status=$?
	if [[ $status -eq 5 ]]; then
		echo "$label: pytest collected no tests (exit 5)" >&2
	elif [[ $status -eq 124 ]]; then
		echo "$label: pytest did not finish within ${limit}s" >&2
	elif [[ $status -ne 0 ]]; then
		echo "$label: pytest failed (exit $status)" >&2
	fi
	exit "$status"
}
