"""Payloads and their types: :mod:`.schemas` names, encodes and decodes
the message types a channel declares; :mod:`.payload` turns a channel's
payloads into values to print, and values typed by a user into payloads."""
