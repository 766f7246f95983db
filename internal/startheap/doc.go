// Package startheap backs the heap a process grows into while it starts
// with transparent huge pages, for as long as the start lasts.
//
// Where a page fault is expensive, the start of driftwatch -f over
// thousands of objects spends much of its time faulting in fresh heap
// pages: on a 2-core virtual machine each new 4 KiB page cost 12-16 µs
// (the guest's fault and the hypervisor's), about 8,000 of them before the
// first frame of a relaunch over 5,000 objects. A 2 MiB page takes one
// fault instead of 512.
//
// The Go runtime does not ask for huge pages itself (since Go 1.21.1, see
// golang/go#61718): where the kernel hands them out only on request
// (transparent_hugepage/enabled is "madvise", the default of most
// distributions), the fault that asks may have the kernel compact memory
// to find one, a stall with no bound. Advise therefore asks only there,
// and only while the kernel has at least twice the free huge pages the
// range could take (/proc/buddyinfo), so no fault has to compact; it asks
// for one range of the address space (the first Size bytes the heap grows
// into after the call), and Advice.End withdraws the request, so the
// kernel's background collapsing (khugepaged) never fills the holes the
// runtime later returns to it.
package startheap
