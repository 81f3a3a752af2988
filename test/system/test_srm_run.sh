#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# test_srm_run: how srm-run hands the module to each launcher (--dry-run):
#  - Open MPI's mpirun: -x VAR=VALUE and the pml ucx flags;
#  - hydra (mpiexec.hydra, and a plain mpiexec whose --version says HYDRA):
#    -genv VAR VALUE;
#  - srun: --export=ALL,VAR=VALUE; an srun --export of the caller's own is
#    refused, naming what to add, one among the program's arguments is not
#    (Slurm is not here: srun runs nowhere in this test, only its command
#    line is checked);
#  - --dry-run's line quotes words a shell would split or expand;
#  - a launcher it does not know (aprun) is refused with exit 2 and the
#    settings to export printed; --launcher names one instead;
#  - a program gets the settings in its environment.
# The jobs themselves run in test_mpi (Open MPI) and test_mpich (hydra).
#
. "$(dirname "$0")/lib.sh"

[ -x "$SRM_RUN" ] || srm_skip "srm-run wrapper not found at $SRM_RUN"
# Stand-in launchers: they only answer --version.
fake=$SRM_LOG/bin
mkdir -p "$fake"
printf '#!/bin/sh\necho "HYDRA build details:"\n' >"$fake/mpiexec"
printf '#!/bin/sh\necho "mpirun (Open MPI) 4.1.4"\n' >"$fake/mpirun"
chmod +x "$fake/mpiexec" "$fake/mpirun"

run() { env -u LD_PRELOAD SRM_MODULE="$SRM_MODULE" PATH="$fake:$PATH" "$SRM_RUN" "$@" 2>&1; }
setting=$(run --print-env | head -n 1)
var=${setting%%=*} value=${setting#*=}
agent=$(run --print-env | sed -n 's/^UCX_SRM_AGENT_PATH=//p')

check() {
    local what=$1 want=$2 got
    shift 2
    got=$(run --dry-run "$@")
    if [ "$got" = "$want" ]; then
        srm_pass "$what: $got"
    else
        srm_fail "$what: got '$got', want '$want'"
    fi
}
check "Open MPI's mpirun" \
    "mpirun -x $var=$value -x UCX_SRM_AGENT_PATH=$agent --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -np 2 ./app" \
    mpirun -np 2 ./app
check "hydra by name" \
    "mpiexec.hydra -genv $var $value -genv UCX_SRM_AGENT_PATH $agent -n 2 ./app" \
    mpiexec.hydra -n 2 ./app
check "a plain mpiexec that is hydra" \
    "mpiexec -genv $var $value -genv UCX_SRM_AGENT_PATH $agent -n 2 ./app" \
    mpiexec -n 2 ./app
check "srun" "srun --export=ALL,$var=$value,UCX_SRM_AGENT_PATH=$agent -n 2 ./app" \
    srun -n 2 ./app
check "--launcher hydra for another name" \
    "mylauncher -genv $var $value -genv UCX_SRM_AGENT_PATH $agent ./app" \
    --launcher hydra mylauncher ./app
check "a program" "$var=$value UCX_SRM_AGENT_PATH=$agent ./app -x" ./app -x
check "srun, with --export among the program's arguments" \
    "srun --export=ALL,$var=$value,UCX_SRM_AGENT_PATH=$agent -N 2 ./app --export x" \
    srun -N 2 ./app --export x
for words in "-n2" "--ntasks=2" "-l -n 2" "--label --ntasks 2" "-N 2 -l"; do
    # shellcheck disable=SC2086 # the options are meant to split
    check "srun $words, with --export among the program's arguments" \
        "srun --export=ALL,$var=$value,UCX_SRM_AGENT_PATH=$agent $words ./app --export x" \
        srun $words ./app --export x
done
check "--dry-run quotes what a shell would split" \
    "mpiexec.hydra -genv $var $value -genv UCX_SRM_AGENT_PATH $agent ./app 'a b' '' 'it'\\''s'" \
    mpiexec.hydra ./app "a b" "" "it's"

for words in "--export=NONE -n 2" "-n2 --export=NONE" "--ntasks 2 --export ALL" "-l --export=ALL"; do
    # shellcheck disable=SC2086
    out=$(run srun $words ./app)
    rc=$?
    if [ "$rc" = 2 ] && [[ $out == *"srun's own --export would replace"*"$var=$value"* ]]; then
        srm_pass "srun $words: refused, naming what to add"
    else
        srm_fail "srun $words: exit $rc: $out"
    fi
done
out=$(run aprun -n 2 ./app)
rc=$?
if [ "$rc" = 2 ] && [[ $out == *"launcher srm-run does not know"* ]] &&
   grep -q "^    $var=$value\$" <<<"$out" &&
   grep -q '^    OMPI_MCA_pml_ucx_tls=any$' <<<"$out"; then
    srm_pass "aprun: refused (exit 2), with the settings to export"
else
    srm_fail "aprun: exit $rc: $out"
fi
srm_done
