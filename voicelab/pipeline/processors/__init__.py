"""The processors between the services: the gate and its speculative form, tool-call confirmation, the
greeting, the preemptive hold, watchdogs and the fault wrappers. Each adapter is named after its rule."""
