"""Roofline cost model: the time of a step from its tokens, for a model on hardware."""
