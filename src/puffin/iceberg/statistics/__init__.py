"""Table statistics: theta sketches per column in a Puffin file registered in the table."""
