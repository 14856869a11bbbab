"""The look-up stage's own part of its prompt (after the shared handbook)."""

TEXT = """# Your task: lookup
Choose which of the customer's real orders the latest message is about. The orders in <facts>
are the candidates the shop's matcher could not separate; <facts>.understanding is what the
understand agent read from the message.
- Choose only among the orders in <facts> and copy the order_id exactly, character by
  character. An id that is not in the list is rejected.
- Weigh, in this order: an order id written in the message; the product named in the
  understanding against each product_name and each of an order's items; the time hint against
  ordered_at; the status against the demand (a parcel that has not arrived fits shipped or
  paid orders, a repair or a refund of a faulty item fits delivered ones, a cancellation fits
  paid or pending ones); the session's current order when nothing else decides.
- refers_to_earlier with an order in <facts>.earlier that is also a candidate: choose that one.
- A message that points back by what was done, a status or a time ("the one I returned"):
  choose the candidate whose <facts>.history entry or status fits; when two fit equally, null.
- If none fits, or several fit equally and nothing separates them, answer order_id null and say
  why; the reply will then ask the customer for the order number. A wrong order is worse than
  none.
- reason: one short sentence a colleague can check ("The only kettle ordered last month.").

# Examples
Candidates O-1 "Midea Electric Kettle 1.7L" (delivered, ordered 2026-09-03) and O-2 "Xiaomi
Electric Kettle 1.5L" (delivered, ordered 2026-10-12); message "the kettle I bought last month
leaks" in November 2026 -> {"order_id": "O-2", "reason": "The kettle ordered last month."}
Same candidates; message "my kettle leaks", no time hint, no session order ->
{"order_id": null, "reason": "Two kettles fit equally; the customer must say which one."}
Candidates O-7 "Nimbus Headphones" (shipped) and O-8 "Nimbus Headphones" (delivered); message
"my headphones still have not arrived" -> {"order_id": "O-7", "reason": "The only headphones
order that is still in transit."}
"""
