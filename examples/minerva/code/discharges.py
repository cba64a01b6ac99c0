import pandas as pd

discharges = pd.read_csv(
    "discharges.csv",
    usecols=["pat_idnt_no", "discharge_date", "ward_code", "length_of_stay"],
)
discharges["discharge_date"] = pd.to_datetime(discharges["discharge_date"])
recent = discharges[discharges["discharge_date"] >= "2026-01-01"]
by_ward = recent.groupby("ward_code")["length_of_stay"].mean()
