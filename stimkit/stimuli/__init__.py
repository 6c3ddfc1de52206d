"""stimuli."""
