# experiment 1 (hosts)
/work/main/contrib/bench/hosts.sh --build /work/main/build --reps 3 --out /tmp/eval8/hosts.md

# experiment 2 and 3 (mesh)
/work/main/contrib/bench/mesh.sh --build /work/main/build --reps 3 --out /tmp/eval8/mesh.md

# experiment 4 (resources)
/work/main/contrib/bench/resources.sh --build /work/main/build --reps 3 --out /tmp/eval8/resources.md

# experiment 5 (flows)
/work/main/contrib/bench/flows.sh --build /work/main/build --reps 3 --out /tmp/eval8/flows.md

# experiment 6 (model)
/work/main/contrib/bench/model.sh --out /tmp/eval8/model.md --costs /tmp/eval8/resources-costs.txt

