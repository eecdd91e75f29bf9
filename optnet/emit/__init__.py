"""Emitters: every text file optnet writes is rendered here from Jinja2 templates."""
