# experiment 1 (hosts)
/work/main/contrib/bench/hosts.sh --build /work/main/build --reps 2 --out /work/scratch/eval-run/hosts.md

# experiment 2 and 3 (mesh)
/work/main/contrib/bench/mesh.sh --build /work/main/build --reps 2 --out /work/scratch/eval-run/mesh.md

# experiment 4 (resources)
/work/main/contrib/bench/resources.sh --build /work/main/build --reps 2 --out /work/scratch/eval-run/resources.md

# experiment 5 (flows)
/work/main/contrib/bench/flows.sh --build /work/main/build --reps 2 --out /work/scratch/eval-run/flows.md

# experiment 6 (model)
/work/main/contrib/bench/model.sh --out /work/scratch/eval-run/model.md --costs /work/scratch/eval-run/resources-costs.txt

