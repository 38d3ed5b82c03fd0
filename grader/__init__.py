"""pmap-course autograder: grades multi-device JAX exercises with student code kept out of the verdict."""

__version__ = "0.1.0"
