#!/usr/bin/env bash
# The shell completions offer every command and every flag the binary's own help lists, so they
# cannot fall behind the CLI.  check_completion.sh NATSFLEET_BINARY SOURCE_DIR
set -uo pipefail
binary="$1" source_dir="$2"
problems=0

# bash: run the completion function as bash-completion would for a given command line.
source /usr/share/bash-completion/bash_completion
source "$source_dir/packaging/completion/natsfleet.bash"
offered() {
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  _natsfleet natsfleet "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}"
}
expect() {  # expect WORD -- COMMAND LINE...
  local word="$1"
  shift 2
  local words
  words=$(offered "$@")  # whole, before grep -q stops reading (a SIGPIPE fails the pipe)
  if ! grep -qxF -- "$word" <<<"$words"; then
    echo "FAIL: bash completion of '$*' does not offer $word"
    problems=$((problems + 1))
  fi
}
# The flags a command's --help lists (CLI11's "  --flag" lines), -h/--help left out.
flags_of() { "$binary" "$@" --help | sed -n 's/^  \(-[a-z],\)\?\(--[a-z-]*\).*/\2/p' | grep -v '^--help$'; }

commands=$("$binary" help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z-]*\) .*/\1/p')
[ -n "$commands" ] || { echo "FAIL: no commands in natsfleet help"; exit 1; }
for command in $commands; do
  expect "$command" -- natsfleet ""
  [ "$command" = dead-letters ] && continue
  for flag in $(flags_of "$command"); do expect "$flag" -- natsfleet "$command" --; done
done
for sub in list replay purge; do
  expect "$sub" -- natsfleet dead-letters ""
  for flag in $(flags_of dead-letters "$sub"); do
    expect "$flag" -- natsfleet dead-letters "$sub" --
  done
done
expect --version -- natsfleet --

# zsh: the completion parses, and names every command and flag too.
zsh -n "$source_dir/packaging/completion/_natsfleet" || problems=$((problems + 1))
for word in $commands $(for c in $commands; do [ "$c" = dead-letters ] || flags_of "$c"; done) \
    $(flags_of dead-letters replay) list replay purge; do
  grep -qF -- "$word" "$source_dir/packaging/completion/_natsfleet" ||
    { echo "FAIL: the zsh completion does not name $word"; problems=$((problems + 1)); }
done

echo "$problems problem(s) in the shell completions"
[ "$problems" -eq 0 ]
