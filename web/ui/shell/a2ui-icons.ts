// Icons for the A2UI page's Icon component, as inline SVG: Google's
// Material Symbols (outlined, weight 400; Apache License 2.0), the symbols
// the catalog's names come from, kept in ./icons from the npm package
// @material-symbols/svg-400 (only these files; see icons/README.md). First the standard catalog's 48 names (its off and
// filled pairs map to the outlined and filled symbol; payment and phone,
// which Material Symbols names otherwise, to credit_card and mobile); then
// some common symbols agents bind by their Material name (the A2UI
// gallery's "pause", "trending_up", ...). Other names show as their text.

import i_accountCircle from "./icons/account_circle.svg";
import i_add from "./icons/add.svg";
import i_arrowBack from "./icons/arrow_back.svg";
import i_arrowForward from "./icons/arrow_forward.svg";
import i_attachFile from "./icons/attach_file.svg";
import i_calendarToday from "./icons/calendar_today.svg";
import i_call from "./icons/call.svg";
import i_camera from "./icons/camera.svg";
import i_check from "./icons/check.svg";
import i_close from "./icons/close.svg";
import i_delete from "./icons/delete.svg";
import i_download from "./icons/download.svg";
import i_edit from "./icons/edit.svg";
import i_event from "./icons/event.svg";
import i_error from "./icons/error.svg";
import i_favorite from "./icons/favorite-fill.svg";
import i_favoriteOff from "./icons/favorite.svg";
import i_folder from "./icons/folder.svg";
import i_help from "./icons/help.svg";
import i_home from "./icons/home.svg";
import i_info from "./icons/info.svg";
import i_locationOn from "./icons/location_on.svg";
import i_lock from "./icons/lock.svg";
import i_lockOpen from "./icons/lock_open.svg";
import i_mail from "./icons/mail.svg";
import i_menu from "./icons/menu.svg";
import i_moreVert from "./icons/more_vert.svg";
import i_moreHoriz from "./icons/more_horiz.svg";
import i_notificationsOff from "./icons/notifications_off.svg";
import i_notifications from "./icons/notifications.svg";
import i_payment from "./icons/credit_card.svg";
import i_person from "./icons/person.svg";
import i_phone from "./icons/mobile.svg";
import i_photo from "./icons/photo.svg";
import i_print from "./icons/print.svg";
import i_refresh from "./icons/refresh.svg";
import i_search from "./icons/search.svg";
import i_send from "./icons/send.svg";
import i_settings from "./icons/settings.svg";
import i_share from "./icons/share.svg";
import i_shoppingCart from "./icons/shopping_cart.svg";
import i_star from "./icons/star-fill.svg";
import i_starHalf from "./icons/star_half.svg";
import i_starOff from "./icons/star.svg";
import i_upload from "./icons/upload.svg";
import i_visibility from "./icons/visibility.svg";
import i_visibilityOff from "./icons/visibility_off.svg";
import i_warning from "./icons/warning.svg";
import x_pause from "./icons/pause.svg";
import x_play_arrow from "./icons/play_arrow.svg";
import x_stop from "./icons/stop.svg";
import x_skip_next from "./icons/skip_next.svg";
import x_skip_previous from "./icons/skip_previous.svg";
import x_fast_forward from "./icons/fast_forward.svg";
import x_fast_rewind from "./icons/fast_rewind.svg";
import x_volume_up from "./icons/volume_up.svg";
import x_volume_off from "./icons/volume_off.svg";
import x_mic from "./icons/mic.svg";
import x_trending_up from "./icons/trending_up.svg";
import x_trending_down from "./icons/trending_down.svg";
import x_arrow_upward from "./icons/arrow_upward.svg";
import x_arrow_downward from "./icons/arrow_downward.svg";
import x_directions_run from "./icons/directions_run.svg";
import x_directions_walk from "./icons/directions_walk.svg";
import x_directions_car from "./icons/directions_car.svg";
import x_priority_high from "./icons/priority_high.svg";
import x_schedule from "./icons/schedule.svg";
import x_today from "./icons/today.svg";
import x_alarm from "./icons/alarm.svg";
import x_timer from "./icons/timer.svg";
import x_bolt from "./icons/bolt.svg";
import x_local_shipping from "./icons/local_shipping.svg";
import x_inventory_2 from "./icons/inventory_2.svg";
import x_local_cafe from "./icons/local_cafe.svg";
import x_restaurant from "./icons/restaurant.svg";
import x_thumb_up from "./icons/thumb_up.svg";
import x_thumb_down from "./icons/thumb_down.svg";
import x_chat from "./icons/chat.svg";
import x_cloud from "./icons/cloud.svg";
import x_sunny from "./icons/sunny.svg";
import x_water_drop from "./icons/water_drop.svg";
import x_thermostat from "./icons/thermostat.svg";
import x_fitness_center from "./icons/fitness_center.svg";
import x_shopping_bag from "./icons/shopping_bag.svg";
import x_credit_card from "./icons/credit_card.svg";
import x_account_balance from "./icons/account_balance.svg";
import x_receipt from "./icons/receipt.svg";
import x_language from "./icons/language.svg";
import x_link from "./icons/link.svg";
import x_open_in_new from "./icons/open_in_new.svg";
import x_chevron_right from "./icons/chevron_right.svg";
import x_chevron_left from "./icons/chevron_left.svg";
import x_check_circle from "./icons/check_circle.svg";
import x_cancel from "./icons/cancel.svg";
import x_pending from "./icons/pending.svg";
import x_local_fire_department from "./icons/local_fire_department.svg";
import x_group from "./icons/group.svg";
import x_map from "./icons/map.svg";

/** The standard catalog's icon names (Icon.name's enum) → SVG markup. */
export const icons: Record<string, string> = {
  accountCircle: i_accountCircle,
  add: i_add,
  arrowBack: i_arrowBack,
  arrowForward: i_arrowForward,
  attachFile: i_attachFile,
  calendarToday: i_calendarToday,
  call: i_call,
  camera: i_camera,
  check: i_check,
  close: i_close,
  delete: i_delete,
  download: i_download,
  edit: i_edit,
  event: i_event,
  error: i_error,
  favorite: i_favorite,
  favoriteOff: i_favoriteOff,
  folder: i_folder,
  help: i_help,
  home: i_home,
  info: i_info,
  locationOn: i_locationOn,
  lock: i_lock,
  lockOpen: i_lockOpen,
  mail: i_mail,
  menu: i_menu,
  moreVert: i_moreVert,
  moreHoriz: i_moreHoriz,
  notificationsOff: i_notificationsOff,
  notifications: i_notifications,
  payment: i_payment,
  person: i_person,
  phone: i_phone,
  photo: i_photo,
  print: i_print,
  refresh: i_refresh,
  search: i_search,
  send: i_send,
  settings: i_settings,
  share: i_share,
  shoppingCart: i_shoppingCart,
  star: i_star,
  starHalf: i_starHalf,
  starOff: i_starOff,
  upload: i_upload,
  visibility: i_visibility,
  visibilityOff: i_visibilityOff,
  warning: i_warning,
};

/** More Material Symbols by their snake_case name → SVG markup. */
const more: Record<string, string> = {
  pause: x_pause,
  play_arrow: x_play_arrow,
  stop: x_stop,
  skip_next: x_skip_next,
  skip_previous: x_skip_previous,
  fast_forward: x_fast_forward,
  fast_rewind: x_fast_rewind,
  volume_up: x_volume_up,
  volume_off: x_volume_off,
  mic: x_mic,
  trending_up: x_trending_up,
  trending_down: x_trending_down,
  arrow_upward: x_arrow_upward,
  arrow_downward: x_arrow_downward,
  directions_run: x_directions_run,
  directions_walk: x_directions_walk,
  directions_car: x_directions_car,
  priority_high: x_priority_high,
  schedule: x_schedule,
  today: x_today,
  alarm: x_alarm,
  timer: x_timer,
  bolt: x_bolt,
  local_shipping: x_local_shipping,
  inventory_2: x_inventory_2,
  local_cafe: x_local_cafe,
  restaurant: x_restaurant,
  thumb_up: x_thumb_up,
  thumb_down: x_thumb_down,
  chat: x_chat,
  cloud: x_cloud,
  sunny: x_sunny,
  water_drop: x_water_drop,
  thermostat: x_thermostat,
  fitness_center: x_fitness_center,
  shopping_bag: x_shopping_bag,
  credit_card: x_credit_card,
  account_balance: x_account_balance,
  receipt: x_receipt,
  language: x_language,
  link: x_link,
  open_in_new: x_open_in_new,
  chevron_right: x_chevron_right,
  chevron_left: x_chevron_left,
  check_circle: x_check_circle,
  cancel: x_cancel,
  pending: x_pending,
  local_fire_department: x_local_fire_department,
  group: x_group,
  map: x_map,
};

/** The SVG of icon name (a catalog name, or a Material Symbol in camelCase or snake_case), or "". */
export function iconSVG(name: string): string {
  if (Object.hasOwn(icons, name)) return icons[name];
  const snake = name.replace(/([A-Z])/g, "_$1").toLowerCase();
  return Object.hasOwn(more, snake) ? more[snake] : "";
}
