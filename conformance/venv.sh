# Sourced by the Python conformance suites' run.sh scripts (pyiceberg,
# schemathesis, spark): one way to check the interpreter and to keep a
# suite's virtualenv under .cache/.
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
