set terminal pngcairo size 960,640 noenhanced font 'DejaVu Sans,11'
set grid
set key below height 1.5
set datafile commentschars "#"
set style data linespoints
set logscale x 2
set xtics (1,2,4,8,16)
set xrange [1/1.25:16*1.25]
set xlabel "P: ranks per host"

set output 'resources-conn.png'
set title "TCP connections to other hosts, per host\nmedian of 3 runs per point; 3 simulated hosts; 2026-12-01 08:17:23 UTC; vm"
set ylabel "established connections to other hosts"
set logscale y
plot 'resources-conn.dat' using 1:2 title "srm (srmd + ranks)" lw 2 pt 7, "" using 1:3 title "tcp (ranks)" lw 2 pt 5, "" using 1:4 title "4(N-1)" with lines dt 2 lc 1, "" using 1:5 title "P^2(N-1)" with lines dt 2 lc 2

set output 'resources-mem.png'
unset logscale y
set yrange [0:*]
set title "memory per host: Pss of the agent and all ranks\nmedian of 3 runs per point; 3 simulated hosts; 2026-12-01 08:17:23 UTC; vm"
set ylabel "kB"
plot 'resources-mem.dat' using 1:2 title "srm (srmd + ranks)" lw 2 pt 7, "" using 1:3 title "tcp (ranks)" lw 2 pt 5

unset output
