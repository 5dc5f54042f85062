"""The prediction lab: fitting the roofline's efficiencies and validating predictions on published figures.

It imports the runtime model in :mod:`perdollar.predict`; the runtime never imports the lab.
Refit with ``python -m perdollar.predict.lab.fit DATA_DIR``.
"""
