"""Table metadata below the scan: manifests, the v3 metadata writer, snapshots, the commit loop."""
