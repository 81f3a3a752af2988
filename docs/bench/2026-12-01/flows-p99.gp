set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'
set output "flows-p99.png"
set title "Short flows (64 B-8 KB): p99 flow completion time\n3 hosts x 2 processes, link rate 100 MB/s, 10 s per run, median and min-max of 3 runs"
set xlabel "offered load (fraction of the link rate per host)"
set ylabel "short-flow p99 FCT (ms)"
set logscale y
set format y "%g"
set grid ytics
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.7 border -1
set key top left
set yrange [*:*]
plot "flows-p99.dat" using ($2/1e3):($3/1e3):($4/1e3):xtic(1) title "srm, bulk channel (UCX_SRM_LARGE_THRESH=8k)", \
     "" using ($5/1e3):($6/1e3):($7/1e3) title "srm, no bulk channel (UCX_SRM_LARGE_THRESH=inf)", \
     "" using ($8/1e3):($9/1e3):($10/1e3) title "UCX tcp (UCX_TLS=tcp)"
