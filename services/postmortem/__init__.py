"""Postmortem queries over the history store, and their rendering for people and scripts."""
