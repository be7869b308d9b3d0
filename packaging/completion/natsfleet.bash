# bash completion for natsfleet(1): commands, their flags, and files where a config goes.
_natsfleet() {
  local cur prev words cword
  _init_completion || return
  local commands="run lint audit dead-letters demo version help"
  local command="" sub="" i
  for ((i = 1; i < cword; i++)); do
    case "${words[i]}" in
      -*) ;;
      *)
        if [[ -z $command ]]; then command="${words[i]}"
        elif [[ $command == dead-letters && -z $sub ]]; then sub="${words[i]}"
        fi ;;
    esac
  done
  case "$prev" in
    --config) _filedir toml; return ;;
    --log-format) COMPREPLY=($(compgen -W "text json" -- "$cur")); return ;;
    --server | --subject | --to | --seq | --interval | --timeout | --messages) return ;;
  esac
  local flags=""
  case "$command" in
    "") COMPREPLY=($(compgen -W "$commands --version --help" -- "$cur")); return ;;
    run) flags="--server --log-format --help" ;;
    lint) flags="--help" ;;
    audit) flags="--server --config --json --interval --timeout --help" ;;
    dead-letters)
      if [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "list replay purge --help" -- "$cur")); return
      fi
      flags="--server --subject --config --json --timeout --help"
      [[ $sub == replay ]] && flags+=" --to --seq"
      [[ $sub == purge ]] && flags+=" --seq" ;;
    demo) flags="--messages --help" ;;
    *) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  elif [[ $command == run || $command == lint ]]; then
    _filedir toml
  fi
}
complete -F _natsfleet natsfleet
