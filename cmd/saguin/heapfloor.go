package main

import "runtime"

// heapFloorBytes is the fixed minimum-heap allowance RFC 0005 "The runtime's
// own pauses, and the two variables that move them" promises: with the Go
// runtime's own 4 MB minimum goal, a broker holding little collects many
// times a second under a burst of small allocations, each collection able to
// stall whoever holds a broker lock. Held as live heap, 8 MB raises every
// goal by that much times GOGC/100.
const heapFloorBytes = 8 << 20

// heapFloor holds the allowance for the life of the process. It has no
// pointers, so the collector never scans it, and it is never written, so
// its pages are never touched and cost next to no resident memory.
var heapFloor []byte

// holdHeapFloor allocates the allowance and collects once, so that the live
// heap the pacer and the first scrape read (saguin_go_heap_live_bytes)
// counts it from the start rather than from the first collection a burst
// brings; at start the heap is nearly empty and that collection is brief.
func holdHeapFloor() {
	heapFloor = make([]byte, heapFloorBytes)
	runtime.GC()
}
