"""The web console at ``/ui`` of the daemon's HTTP port (``app``), its sessions and its plots."""
