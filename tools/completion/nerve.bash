# bash completion of the nerve command: verbs (built-in and the nerve-VERB
# programs `nerve help` finds), each verb's flags (from its --help) and
# channel names (the files /dev/shm/nerve.NAME). Installed as
# share/bash-completion/completions/nerve; or `source` this file.

_nerve_verbs()
{
    command nerve help 2>/dev/null |
        awk '/^  [a-z]/ && !/\(not installed/ { print $1 }'
}

_nerve_flags()
{
    command nerve "$1" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u
}

_nerve_channels()
{
    local f
    for f in /dev/shm/nerve.*; do
        [ -e "$f" ] && printf '%s\n' "${f#/dev/shm/nerve.}"
    done
}

_nerve()
{
    local cur=${COMP_WORDS[COMP_CWORD]}
    local prev=${COMP_WORDS[COMP_CWORD-1]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(_nerve_verbs) --help --version" -- "$cur"))
        return 0
    fi
    local verb=${COMP_WORDS[1]}
    case $prev in
        --schema|--file|-f|--json-file|--histogram|-o|--output)
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0 ;;
        --format)
            COMPREPLY=($(compgen -W "raw hex text json" -- "$cur"))
            return 0 ;;
    esac
    case $cur in
        -*)
            COMPREPLY=($(compgen -W "$(_nerve_flags "$verb")" -- "$cur")) ;;
        *)
            case $verb in
                help) COMPREPLY=($(compgen -W "$(_nerve_verbs)" -- "$cur")) ;;
                bench|plot|play|cyclic) COMPREPLY=($(compgen -f -- "$cur")) ;;
                *) COMPREPLY=($(compgen -W "$(_nerve_channels)" -- "$cur")) ;;
            esac ;;
    esac
    return 0
}

complete -F _nerve nerve
