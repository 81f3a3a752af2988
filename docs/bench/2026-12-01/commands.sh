# experiment 1 (hosts)
/work/main/contrib/bench/hosts.sh --build /work/main/build --reps 3 --tcp-cc reno --out /tmp/eval15/hosts.md

# experiment 2 and 3 (mesh)
/work/main/contrib/bench/mesh.sh --build /work/main/build --reps 3 --tcp-cc reno --out /tmp/eval15/mesh.md

# experiment 4 (resources)
/work/main/contrib/bench/resources.sh --build /work/main/build --reps 3 --out /tmp/eval15/resources.md

# experiment 5 (flows)
/work/main/contrib/bench/flows.sh --build /work/main/build --reps 3 --out /tmp/eval15/flows.md

# experiment 6 (model)
/work/main/contrib/bench/model.sh --out /tmp/eval15/model.md --costs /tmp/eval15/resources-costs.txt

